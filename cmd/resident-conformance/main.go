// Command resident-conformance checks an external provider against the
// provider contract: the same suite (provider/providertest) every built-in
// provider passes, driven over docs/provider-protocol.md.
//
//	go run ./cmd/resident-conformance [--image IMG] [--state-dir DIR] -- CMD [ARGS...]
//
// It prints one line per contract rule (PASS, FAIL or SKIP, with the
// reason) and exits non-zero when any rule fails. Run it against your own
// cloud: it creates and removes sandboxes under an install id of its own.
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external"
	"github.com/resident-dev/resident/provider/providertest"
)

func main() {
	fs := flag.NewFlagSet("resident-conformance", flag.ExitOnError)
	image := fs.String("image", "", "an image the provider can run with a POSIX sh and the usual tools (busybox will do); empty for providers that ignore images")
	run := fs.String("run", "", "only the rules whose names match this regular expression")
	timeout := fs.Duration("call-timeout", external.DefaultCallTimeout, "the deadline of one call to the provider")
	verbose := fs.Bool("log", false, "show the provider's log (stderr) as the suite runs")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: resident-conformance [flags] -- CMD [ARGS...]")
		fs.PrintDefaults()
	}
	_ = fs.Parse(os.Args[1:])
	argv := fs.Args()
	if len(argv) == 0 {
		fs.Usage()
		os.Exit(2)
	}
	log := zap.NewNop()
	if *verbose {
		log, _ = zap.NewDevelopment()
	}
	open := func(t *testing.T) provider.Provider {
		p, err := external.New(provider.Config{Args: argv, Logger: log,
			Options: provider.NewOptions(map[string]string{external.CallTimeoutOption.Name: timeout.String()})})
		if err != nil {
			t.Fatalf("start the provider: %v", err)
		}
		t.Cleanup(func() { _ = p.Close() })
		return p
	}
	harness := providertest.Harness{New: open, Image: *image,
		// Volumes are seeded through a sandbox, so no backend access is needed.
		Volume: func(t *testing.T, owner provider.Owner, name string, files map[string]string) {
			providertest.SeedThroughSandbox(t, open(t), *image, owner, name, files)
		},
	}
	// testing.Main runs the suite outside `go test`; -test.v prints a line
	// per rule as it ends.
	os.Args = []string{os.Args[0], "-test.v", "-test.timeout", (30 * time.Minute).String()}
	if *run != "" {
		os.Args = append(os.Args, "-test.run", "Conformance/"+*run)
	}
	testing.Main(func(pat, str string) (bool, error) { return regexp.MatchString(pat, str) },
		[]testing.InternalTest{{Name: "Conformance", F: func(t *testing.T) { providertest.Run(t, harness) }}}, nil, nil)
}
