//go:build linux

package local

import (
	"context"
	"io"
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
