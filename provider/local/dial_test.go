//go:build linux

package local

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// TestWithoutBwrapNoNetCarrying: without isolation local announces neither
// port_forward nor egress, and DialSandbox and AttachProxy say ErrNoDial
// (there is no sandbox network to enter) rather than reach the host's.
func TestWithoutBwrapNoNetCarrying(t *testing.T) {
	saved := bwrapName
	bwrapName = "resident-test-no-such-bwrap"
	t.Cleanup(func() { bwrapName = saved })
	pv, err := New(provider.Config{StateDir: t.TempDir(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	p := pv.(*Provider)
	defer p.Close()
	if c := p.Info().Capabilities; c.PortForward || c.Egress {
		t.Fatalf("without bwrap: port_forward=%v egress=%v", c.PortForward, c.Egress)
	}
	id, err := p.Create(context.Background(), protocol.Spec{}, provider.Owner{Key: "resident-install-id", InstallID: "nodial"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Terminate(context.Background(), id)
	if _, err := p.DialSandbox(context.Background(), id, 80); !errors.Is(err, provider.ErrNoDial) {
		t.Errorf("DialSandbox without bwrap: %v, want ErrNoDial", err)
	}
	if _, err := p.AttachProxy(context.Background(), id, "c1"); !errors.Is(err, provider.ErrNoDial) {
		t.Errorf("AttachProxy without bwrap: %v, want ErrNoDial", err)
	}
}
