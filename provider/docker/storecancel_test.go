package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
)

// A store read whose engine freezes mid-stream ends with its request: once
// the request's context is done (the host cancelled, the resident is
// shutting down) the blocked read returns instead of holding the request
// for as long as the engine stays frozen. Before, nothing watched the
// context once the helper's stream was flowing.
func TestStoreReadEndsWithItsRequest(t *testing.T) {
	needEngine(t)
	px := startProxy(t)
	p, _ := newTestProvider(t, px.host())
	p.timing.api = 5 * time.Second
	vol := runID + "-frozen"
	seedVolume(t, p, vol, map[string]string{"seed": ""})
	id := create(t, p, testOwner(t), protocol.Spec{Volumes: []protocol.VolumeMount{{Name: vol, Path: "/data"}}}, nil)
	sh(t, p, id, "head -c 67108864 /dev/urandom > /data/big")

	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	rc, err := p.ReadFile(ctx, testOwner(t), vol, "big")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(rc, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	expectCutRead(t, px, rc, cancel)
}

// expectCutRead ends rc's request on a frozen engine: the blocked read
// must return, with an error, instead of waiting for the engine.
func expectCutRead(t *testing.T, px *engineProxy, rc io.ReadCloser, cancel context.CancelFunc) {
	t.Helper()
	px.setFrozen(true)
	cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, rc)
		done <- err
	}()
	select {
	case err := <-done:
		t.Logf("the read ended %s after its request did: %v", time.Since(start).Round(time.Millisecond), err)
		if err == nil {
			t.Error("a cut read reported success")
		}
	case <-time.After(20 * time.Second):
		px.setFrozen(false)
		t.Fatal("the read still blocks 20s after its request ended, on a frozen engine")
	}
	px.setFrozen(false)
	rc.Close()
}

// The helper's header line is bounded like any control call: a helper
// whose header never comes (an engine frozen once the helper started; here,
// deterministically, a helper that never writes one: "keeper alive") gives
// transient within the bound, not a hang.
func TestStoreHelperHeaderIsBounded(t *testing.T) {
	needEngine(t)
	p, _ := newTestProvider(t)
	vol := runID + "-hdr"
	seedVolume(t, p, vol, map[string]string{"f": "x"})
	p.timing.api = 3 * time.Second
	run, err := p.storeHelper(testCtx(t), vol, "f", "alive")
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	start := time.Now()
	_, rerr := run.stdout.ReadSlice('\n')
	run.headerRead()
	took := time.Since(start)
	if rerr == nil {
		t.Fatal("a header came from a helper that writes none")
	}
	ferr := run.failure("read_file", rerr)
	t.Logf("header wait: %v after %s", ferr, took.Round(time.Millisecond))
	if protocol.KindOf(ferr) != protocol.KindTransient || !errors.Is(ferr, errEngineTimeout) || took > 15*time.Second {
		t.Fatalf("header wait: %v (kind %s) after %s; want transient within ~3s", ferr, protocol.KindOf(ferr), took)
	}
}

// Close returns once the helper is gone. A helper that ran to its end is
// auto-removed by the engine, and a forced remove meeting that removal
// returns at once ("already in progress") while the container still
// mounts the volume: a volume removal right after Close then failed with
// "volume is in use".
func TestStoreHelperCloseFreesTheVolume(t *testing.T) {
	needEngine(t)
	p, _ := newTestProvider(t)
	for i := range 8 {
		vol := fmt.Sprintf("%s-free%d", runID, i)
		if _, err := p.ensureStoreVolume(testCtx(t), vol, testOwner(t)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = p.cli.VolumeRemove(context.Background(), vol, client.VolumeRemoveOptions{Force: true}) })
		run, err := p.storeHelper(testCtx(t), vol, ".", "ls", "--", ".")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, run.stdout) // to EOF: the helper has exited
		run.Close()
		if _, err := p.cli.VolumeRemove(context.Background(), vol, client.VolumeRemoveOptions{}); err != nil {
			t.Fatalf("round %d: the volume is still held after Close: %v", i, err)
		}
	}
}
