package external

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/serve"
	_ "github.com/resident-dev/resident/provider/local"
)

// fakeEnv makes the test binary a misbehaving provider: local served over
// the protocol, with the fault the variable names. Faults are real process
// behaviour (exits, junk bytes, a full pipe), so the resident's side meets
// them as it would a broken provider in any language.
const fakeEnv = "RESIDENT_EXTERNAL_FAKE"

func runFakeIfAsked() {
	mode := os.Getenv(fakeEnv)
	if mode == "" {
		return
	}
	os.Exit(fakeMain(mode))
}

func fakeMain(mode string) int {
	switch mode {
	case "net-no-commands", "net-bad-commands":
		return netFakeMain(mode)
	case "conn-none", "conn-relay", "conn-refused", "conn-flood", "conn-exit", "conn-hang":
		return connFakeMain(mode)
	case "exit-at-start":
		fmt.Fprintln(os.Stderr, "fake: exiting at once")
		return 3
	case "junk-at-start":
		fmt.Fprint(os.Stdout, "Loading plugins...\n")
	case "flood-stderr":
		go func() {
			line := strings.Repeat("x", 200) + "\n"
			for {
				if _, err := os.Stderr.WriteString(line); err != nil {
					return
				}
			}
		}()
	}
	state := os.Getenv("RESIDENT_EXTERNAL_FAKE_STATE")
	inner, err := provider.Open("local", provider.Config{StateDir: state, Logger: zap.NewNop()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	prov := &faulty{Provider: inner, mode: mode}
	if mode == "deaf" {
		// Answers the handshake, then never reads its stdin again.
		prov.deafAfterInit = true
	}
	var served provider.Provider = prov
	if mode == "fixed-owners" {
		served = fixedOwners{prov, inner.(provider.OwnerMemory)}
	}
	srv := serve.New(served, zap.NewNop())
	in := os.Stdin
	if mode == "junk-mid-session" {
		prov.onCreate = func() { fmt.Fprint(os.Stdout, "oops\n") }
	}
	if err := srv.Serve(context.Background(), in, os.Stdout); err != nil {
		return 1
	}
	return 0
}

func (f *faulty) ApplyAuth(ctx context.Context, creds map[string]string) error {
	if f.mode == "echo-creds" {
		// A careless provider logs what it was given; the resident must
		// scrub it on the way to its own log.
		for k, v := range creds {
			fmt.Fprintf(os.Stderr, "applying credential %s=%s\n", k, v)
			fmt.Fprintf(os.Stderr, "{\"level\":\"info\",\"msg\":\"auth\",\"token\":%q}\n", v)
		}
	}
	return f.Provider.ApplyAuth(ctx, creds)
}

func (f *faulty) CredentialSecrets(key, value string) []string {
	return []string{key + ":" + value + "-derived"}
}

// fixedOwners serves a provider that remembers owners (local does): the
// handshake then announces fixed_owners.
type fixedOwners struct {
	*faulty
	provider.OwnerMemory
}

// faulty wraps a provider with the faults that need its calls.
type faulty struct {
	provider.Provider
	mode          string
	deafAfterInit bool
	onCreate      func()
}

func (f *faulty) Create(ctx context.Context, spec protocol.Spec, owner provider.Owner, tags map[string]string) (string, error) {
	switch f.mode {
	case "hang-create":
		select {} // never answers, never looks at ctx
	case "deaf":
		time.Sleep(time.Hour)
	case "unknown-kind":
		return "", &protocol.Error{Kind: "exploded", Msg: "the cloud is on fire"}
	}
	if f.onCreate != nil {
		f.onCreate()
	}
	return f.Provider.Create(ctx, spec, owner, tags)
}
