package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"time"
)

// globals are the flags every command takes, before or after its name.
type globals struct {
	provider  string
	installID string
	stateDir  string
	resident  string
	logFile   string
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.provider, "provider", orDefault(g.provider, "local"), "compute provider the resident loads (`residentctl providers` lists what the resident binary has)")
	fs.StringVar(&g.installID, "install-id", orDefault(g.installID, defaultInstallID()), "install id that owns the sandboxes; ls shows what earlier runs with the same id left")
	fs.StringVar(&g.stateDir, "state-dir", g.stateDir, "the resident's --state-dir (default: the resident's own default)")
	fs.StringVar(&g.resident, "resident", g.resident, "resident binary (default: \"resident\" beside residentctl, then on $PATH)")
	fs.StringVar(&g.logFile, "log-file", g.logFile, "append the resident's JSON logs to this file (default: discarded)")
}

func orDefault(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// flags is a command's flag set with the globals registered on it too, so
// `residentctl ls --install-id x` works like `residentctl --install-id x ls`.
func (g *globals) flags(name string, stdio stdio) *flag.FlagSet {
	fs := flag.NewFlagSet("residentctl "+name, flag.ContinueOnError)
	fs.SetOutput(stdio.err)
	fs.Usage = func() {} // usageExit prints the flags, where they belong
	g.register(fs)
	return fs
}

// defaultInstallID is per user, so every run by the same person sees the
// sandboxes earlier runs kept: "residentctl-" and the user name, reduced to
// the characters an install id allows.
func defaultInstallID() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = fmt.Sprint(os.Getuid())
	}
	id := []byte("residentctl-")
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			id = append(id, byte(r))
		default:
			id = append(id, '_')
		}
	}
	if len(id) > 64 {
		id = id[:64]
	}
	return string(id)
}

// errNoResident carries its own hint.
var errNoResident = errors.New("cannot find the resident binary")

// residentPath: --resident, else "resident" beside this executable (how
// the two are shipped and built: go build -o DIR ./cmd/...), else $PATH.
func (g *globals) residentPath() (string, error) {
	if g.resident != "" {
		return g.resident, nil
	}
	var looked []string
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), "resident")
		if info, err := os.Stat(beside); err == nil && !info.IsDir() {
			return beside, nil
		}
		looked = append(looked, filepath.Dir(self))
	}
	if path, err := exec.LookPath("resident"); err == nil {
		return path, nil
	}
	looked = append(looked, "$PATH")
	return "", fmt.Errorf("%w (looked in %s)", errNoResident, strings.Join(looked, " and "))
}

// multiFlag collects a repeatable flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// envFlag parses K=V pairs.
func envMap(pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	env := map[string]string{}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--env %q: want NAME=VALUE", kv)
		}
		env[k] = v
	}
	return env, nil
}

func timeoutSeconds(d time.Duration) (float64, error) {
	if d < 0 {
		return 0, fmt.Errorf("--timeout %s: must not be negative", d)
	}
	return d.Seconds(), nil
}
