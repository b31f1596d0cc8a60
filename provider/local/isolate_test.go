//go:build linux

package local

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// TestWithoutBwrapExecsRunUnisolated: on a machine without bubblewrap
// local still runs commands (the README's first command must work), says
// once that they are unisolated and how to fix it, and refuses exclusive,
// which it could not honour.
func TestWithoutBwrapExecsRunUnisolated(t *testing.T) {
	saved := bwrapName
	bwrapName = "resident-test-no-such-bwrap"
	t.Cleanup(func() { bwrapName = saved })
	core, logs := observer.New(zap.WarnLevel)
	pv, err := New(provider.Config{StateDir: t.TempDir(), Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	p := pv.(*Provider)
	defer p.Close()
	owner := provider.Owner{Key: "resident-install-id", InstallID: "unisolated"}
	if p.Info().Capabilities.Isolation {
		t.Error("capabilities.isolation is true without bwrap")
	}
	_, err = p.Create(context.Background(), protocol.Spec{RequireIsolation: true}, owner, nil)
	if protocol.KindOf(err) != protocol.KindInvalidRequest || !strings.Contains(err.Error(), "unisolated") {
		t.Errorf("require_isolation without bwrap: Create = %v; want invalid_request saying why", err)
	}
	id, err := p.Create(context.Background(), protocol.Spec{}, owner, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Terminate(context.Background(), id)

	for range 2 {
		proc, err := p.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"echo", "hello"}})
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(proc.Stdout())
		_, _ = io.ReadAll(proc.Stderr())
		if st, err := proc.Wait(); err != nil || st.Code != 0 || string(out) != "hello\n" {
			t.Fatalf("unisolated exec: %+v, %v, %q", st, err, out)
		}
	}
	warnings := logs.FilterMessageSnippet("UNISOLATED").All()
	if len(warnings) != 1 || !strings.Contains(warnings[0].Message, "apt-get install bubblewrap") {
		t.Fatalf("want one warning naming the package to install, got %v", logs.All())
	}
	_, err = p.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"true"}, Exclusive: true})
	if protocol.KindOf(err) != protocol.KindInvalidRequest || !strings.Contains(err.Error(), "bubblewrap") {
		t.Fatalf("exclusive without bwrap: %v; want invalid_request naming bubblewrap", err)
	}
}

// TestBwrapSetupFailureIsRetriedAndNeverShown: bwrap can fail its setup
// for a reason of the moment (a host mount vanishing under its remount).
// The sandbox's init is started again, and the failed attempt's message
// never reaches an exec's output; when every attempt fails the create is
// refused as transient, saying why.
func TestBwrapSetupFailureIsRetriedAndNeverShown(t *testing.T) {
	real, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bwrap is not installed")
	}
	for _, c := range []struct {
		fails  int
		wantOK bool
	}{{setupAttempts - 1, true}, {setupAttempts, false}} {
		dir := t.TempDir()
		fake := filepath.Join(dir, "bwrap")
		script := fmt.Sprintf(`#!/bin/sh
for last; do :; done
if [ "$last" != true ]; then
  n=$(cat %[1]s/count 2>/dev/null || echo 0)
  if [ "$n" -lt %[2]d ]; then
    echo $((n+1)) > %[1]s/count
    echo 'bwrap: Can'"'"'t bind mount /oldroot/ on /newroot/: Unable to apply mount flags: Invalid argument' >&2
    exit 1
  fi
fi
exec %[3]s "$@"
`, dir, c.fails, real)
		if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		saved := bwrapName
		bwrapName = fake
		pv, err := New(provider.Config{StateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		p := pv.(*Provider)
		t.Cleanup(func() { _ = p.Close() })
		id, err := p.Create(context.Background(), protocol.Spec{}, provider.Owner{Key: "resident-install-id", InstallID: "internal"}, nil)
		bwrapName = saved
		if !c.wantOK {
			if protocol.KindOf(err) != protocol.KindTransient || !strings.Contains(err.Error(), "Unable to apply mount flags") {
				t.Fatalf("every setup failed: %v; want a transient error saying why", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("setup failed %d times then worked: %v", c.fails, err)
		}
		t.Cleanup(func() { _, _ = p.Terminate(context.Background(), id) })
		proc, err := p.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"echo", "hello"}})
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(proc.Stdout())
		errOut, _ := io.ReadAll(proc.Stderr())
		if st, err := proc.Wait(); err != nil || st.Code != 0 || string(out) != "hello\n" || len(errOut) != 0 {
			t.Fatalf("exec after failed setups: %+v, %v, stdout %q, stderr %q", st, err, out, errOut)
		}
	}
}

func newInternalSandbox(t *testing.T) (*Provider, string) {
	t.Helper()
	pv, err := New(provider.Config{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p := pv.(*Provider)
	t.Cleanup(func() { _ = p.Close() })
	id, err := p.Create(context.Background(), protocol.Spec{}, provider.Owner{Key: "resident-install-id", InstallID: "internal"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = p.Terminate(context.Background(), id) })
	return p, id
}
