package resident

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// dialFake is relayFake with a provider.Dialer: it connects to the test's
// loopback itself (noDial: it says provider.ErrNoDial, so the relay runs).
type dialFake struct {
	*relayFake
	noDial bool
	dials  atomic.Int64
}

var _ provider.Dialer = (*dialFake)(nil)

func (f *dialFake) DialSandbox(ctx context.Context, id string, port int) (provider.Conn, error) {
	if f.gone.Load() {
		return nil, protocol.Errorf(protocol.KindNotFound, "sandbox %q not found", id)
	}
	if f.noDial {
		return nil, fmt.Errorf("%w (not root)", provider.ErrNoDial)
	}
	f.dials.Add(1)
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

// forwardTwenty forwards to an echo server and checks 20 concurrent
// connections, each half-closing and reading the whole answer.
func forwardTwenty(t *testing.T, prov provider.Provider) (h *host, sandboxID string, fwd protocol.ForwardPortResult) {
	t.Helper()
	h = startHost(t, prov)
	h.initialize(nil)
	port, _ := echoServer(t, "echo:")
	var created protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{}}, &created)
	h.call(protocol.MethodForwardPort, map[string]any{"sandbox_id": created.SandboxID, "port": port}, &fwd)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := fmt.Sprintf("hello-%d", i)
			if got, err := roundTrip(fwd.Address, msg); err != nil || got != "echo:"+msg {
				t.Errorf("connection %d read %q (%v)", i, got, err)
			}
		}()
	}
	wg.Wait()
	return h, created.SandboxID, fwd
}

// TestForwardDialsWhereTheProviderCan: a provider with a Dialer carries
// each connection socket to socket, with no relay exec; a closed forward
// refuses connections.
func TestForwardDialsWhereTheProviderCan(t *testing.T) {
	prov := &dialFake{relayFake: newRelayFake()}
	h, _, fwd := forwardTwenty(t, prov)
	if d, r := prov.dials.Load(), prov.relays.Load(); d != 20 || r != 0 {
		t.Fatalf("%d dials and %d relay execs for 20 connections, want 20 and 0", d, r)
	}
	var closed protocol.PortCloseResult
	h.call(protocol.MethodPortClose, map[string]any{"forward_id": fwd.ForwardID}, &closed)
	waitFor(t, "the closed forward to refuse connections", func() bool {
		_, err := roundTrip(fwd.Address, "x")
		return err != nil
	})
}

// TestForwardFallsBackToTheRelayWithoutDial: ErrNoDial sends every
// connection through the relay exec.
func TestForwardFallsBackToTheRelayWithoutDial(t *testing.T) {
	prov := &dialFake{relayFake: newRelayFake(), noDial: true}
	forwardTwenty(t, prov)
	if d, r := prov.dials.Load(), prov.relays.Load(); d != 0 || r != 20 {
		t.Fatalf("%d dials and %d relay execs for 20 connections, want 0 and 20", d, r)
	}
}

// TestForwardEndsWhenADialFindsTheSandboxGone: a dial the provider refuses
// as not_found ends the forward, as a refused relay does.
func TestForwardEndsWhenADialFindsTheSandboxGone(t *testing.T) {
	prov := &dialFake{relayFake: newRelayFake()}
	_, _, fwd := forwardTwenty(t, prov)
	prov.gone.Store(true)
	_, _ = roundTrip(fwd.Address, "x")
	waitFor(t, "a not_found dial to end the forward", func() bool { _, err := roundTrip(fwd.Address, "x"); return err != nil })
}
