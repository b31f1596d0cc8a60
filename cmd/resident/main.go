// Command resident serves one compute provider to a host over JSON-RPC on
// stdin/stdout. See docs/protocol.md for the wire and README.md for usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/resident"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// Exit codes, documented in docs/protocol.md.
const (
	exitOK       = 0
	exitFailure  = 1
	exitProtocol = 2
	exitExpired  = 3
)

func main() {
	os.Exit(run())
}

func run() int {
	// Before anything can print: frames get a private copy of fd 1 and fd 1
	// becomes stderr, so a stray print cannot corrupt the channel.
	framesFD, err := claimStdout()
	if err != nil {
		fmt.Fprintln(os.Stderr, "resident:", err)
		return exitFailure
	}
	growPipes(0, framesFD)
	// os.Stdin stays, blocking, on the same fd 0: nothing reads it.
	hostIn, frames := hostFile(0, "stdin"), hostFile(framesFD, "frames")
	// With SIGPIPE handled, a write to a closed pipe returns EPIPE and the
	// cleanup path runs, instead of the runtime killing the process.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)

	flags := flag.NewFlagSet("resident", flag.ContinueOnError)
	providerName := flags.String("provider", "local", "compute provider to load: "+strings.Join(provider.Names(), ", "))
	stateDir := flags.String("state-dir", defaultStateDir(), "directory for provider state (the local provider's sandboxes and volumes)")
	logLevel := flags.String("log-level", "info", "log level on stderr: debug, info, warn, error")
	var allowVolumes volumeGrants
	flags.Var(&allowVolumes, "allow-volume", "let every install browse and mount `NAME[:rw]`, a volume the resident did not create, read-only unless :rw (repeatable)")
	providerOpts := providerOptions{}
	flags.Var(providerOpts, "provider-opt", "set the provider's option `KEY=VALUE` (repeatable; each provider's options are listed above)")
	showVersion := flags.Bool("version", false, "print the version and exit")
	listProviders := flags.Bool("list-providers", false, "print the providers this binary can load, one name per line on stdout, and exit (residentctl learns them so)")
	serveName := flags.String("serve-provider", "", "serve the named built-in provider over the external provider protocol (docs/provider-protocol.md) to a parent resident, instead of serving a host")
	flags.Usage = func() { usage(flags) }
	if err := flags.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitFailure
	}
	if *showVersion {
		fmt.Fprintln(os.Stderr, "resident", version)
		return exitOK
	}
	if *listProviders {
		// On the real stdout (fd 1 is stderr by now): it is for programs.
		for _, name := range provider.Names() {
			fmt.Fprintln(frames, name)
		}
		return exitOK
	}

	scrubber := hardening.New()
	log, err := newLogger(*logLevel, scrubber)
	if err != nil {
		fmt.Fprintln(os.Stderr, "resident:", err)
		return exitFailure
	}
	defer func() { _ = log.Sync() }()

	if *serveName != "" {
		return serveProvider(*serveName, provider.Config{StateDir: *stateDir, Logger: log, AllowVolumes: allowVolumes, Options: provider.NewOptions(providerOpts)}, hostIn, frames)
	}

	notifier := &resident.Notifier{}
	if len(allowVolumes) > 0 {
		log.Info("volumes allowed by the operator", zap.Stringer("allow_volume", &allowVolumes))
	}
	prov, err := provider.Open(*providerName, provider.Config{
		StateDir:     *stateDir,
		Logger:       log, // each provider names its own child logger
		Notify:       notifier.Notify,
		AllowVolumes: allowVolumes,
		Args:         flags.Args(),
		Options:      provider.NewOptions(providerOpts),
	})
	if err != nil {
		log.Error("cannot load provider", zap.Error(err))
		return exitFailure
	}
	defer func() { _ = prov.Close() }()
	registerEnvironmentSecrets(scrubber, prov.Secrets(), log)

	limits := resident.DefaultLimits()
	setMemoryLimit(limits)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	err = resident.Serve(ctx, stdio{in: hostIn, out: frames}, resident.Options{
		Provider: prov,
		Scrubber: scrubber,
		Logger:   log,
		Limits:   limits,
		Version:  version,
		Notifier: notifier,
	})
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, resident.ErrCredentialsExpired):
		return exitExpired
	case errors.Is(err, resident.ErrProtocol):
		return exitProtocol
	default:
		log.Error("resident stopped", zap.Error(err))
		return exitFailure
	}
}

// setMemoryLimit gives the collector a soft limit a little above the bytes
// the resident may hold for the host (max_held_request_bytes), unless
// GOMEMLIMIT sets one. Without it the heap may grow to twice what is live
// before a collection, and a burst of large frames would leave that much
// resident; with it, freed frames go back before the heap gets there.
func setMemoryLimit(limits protocol.Limits) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limits.MaxHeldRequestBytes + 32<<20)
	}
}

// registerEnvironmentSecrets scrubs the values of the resident's own
// variables that the provider calls secret, before the session can echo them.
// (Serve adds the provider's token patterns.)
func registerEnvironmentSecrets(scrubber *hardening.Scrubber, policy provider.SecretPolicy, log *zap.Logger) {
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		for _, prefix := range policy.EnvPrefixes {
			if strings.HasPrefix(strings.ToUpper(name), strings.ToUpper(prefix)) {
				if !scrubber.AddSecret(value) {
					log.Warn("secret variable too short or blank to scrub", zap.String("name", name))
				}
				break
			}
		}
	}
}

func defaultStateDir() string {
	if dir := os.Getenv("XDG_STATE_HOME"); dir != "" {
		return filepath.Join(dir, "resident")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "resident")
	}
	return filepath.Join(os.TempDir(), "resident")
}

func usage(flags *flag.FlagSet) {
	out := flags.Output()
	fmt.Fprintf(out, "resident %s: serves one compute provider to a host over JSON-RPC 2.0 on stdin/stdout.\n\n", version)
	fmt.Fprintln(out, "usage: resident [--provider NAME] [--provider-opt KEY=VALUE]... [--state-dir DIR] [--log-level LEVEL] [--allow-volume NAME[:rw]]...")
	fmt.Fprintln(out, "       resident --provider external -- CMD [ARGS...]   run CMD as the provider (docs/provider-protocol.md)")
	fmt.Fprintln(out, "       resident --serve-provider NAME                 serve a built-in provider over that protocol")
	fmt.Fprintln(out, "       resident --list-providers                      print the providers below, one per line")
	fmt.Fprintln(out, "\nproviders, and the options each takes (--provider-opt KEY=VALUE):")
	for _, name := range provider.Names() {
		fmt.Fprintf(out, "  %-8s %s\n", name, provider.Summary(name))
		for _, opt := range provider.OptionsOf(name) {
			fmt.Fprintf(out, "  %-8s   %s: %s\n", "", opt.OptionName(), opt.Usage())
		}
	}
	fmt.Fprintln(out, "\nflags:")
	flags.PrintDefaults()
	fmt.Fprintln(out, "\nexit codes: 0 shutdown or stdin closed; 1 other failure; 2 unrecoverable protocol error; 3 credentials expired")
}
