package kubernetes

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// heldStream is the attach stream this provider holds to a sandbox's keeper.
func heldStream(t *testing.T, p *Provider, id string) *attachStream {
	t.Helper()
	h := p.holderOf(id)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rw == nil {
		t.Fatal("no channel held")
	}
	return h.rw
}

// awaitWait waits for proc's end, for at most two minutes.
func awaitWait(t *testing.T, proc provider.Process, what string) (provider.ExitStatus, error) {
	t.Helper()
	type result struct {
		st  provider.ExitStatus
		err error
	}
	waited := make(chan result, 1)
	go func() { st, err := proc.Wait(); waited <- result{st, err} }()
	select {
	case r := <-waited:
		return r.st, r.err
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s: Wait did not return", what)
	}
	return provider.ExitStatus{}, nil
}

// The attach stream broken mid-exec (the connection ends with no kill
// frame, as when a proxy or the network drops it): the exec ends
// transient at once, the next call reconnects, and the keeper, taken over
// by that new hold, has killed the broken exec's tree.
func TestAttachStreamBrokenMidExec(t *testing.T) {
	p := newTestProvider(t)
	id := createFor(t, p, testOwner("broken"), protocol.Spec{Image: cluster.Image})
	proc, err := p.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"sh", "-c", "sleep 311 & sleep 312"}})
	if err != nil {
		t.Fatal(err)
	}
	go drain(proc)
	awaitSleeps(t, p, id, "31[12]", 2, "the exec's tree running")
	_ = heldStream(t, p, id).Close()
	if _, err := awaitWait(t, proc, "the exec on a broken stream"); protocol.KindOf(err) != protocol.KindTransient {
		t.Fatalf("exec on a broken attach stream: %v (kind %s), want transient", err, protocol.KindOf(err))
	}
	awaitSleeps(t, p, id, "31[12]", 0, "the broken exec's tree after the reconnect")
}

// A holder that goes silent (the resident SIGKILLed: its attach stream
// may stay open at the kubelet, and the container's stdin always does)
// loses its execs at the end of its lease, with no new holder needed:
// watched here through the exec subresource, which takes nothing over.
func TestSilentHolderLosesItsExecs(t *testing.T) {
	p := newTestProvider(t)
	id := createFor(t, p, testOwner("silent"), protocol.Spec{Image: cluster.Image})
	proc, err := p.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"sleep", "313"}})
	if err != nil {
		t.Fatal(err)
	}
	go drain(proc)
	watcher := newTestProviderMode(t, modeExec, nil)
	awaitSleeps(t, watcher, id, "313", 1, "the exec running")
	_ = heldStream(t, p, id).Close()
	_, _ = awaitWait(t, proc, "the exec on a closed stream")
	awaitSleeps(t, watcher, id, "313", 0, "the exec after its holder's lease")
}

// A new resident takes a sandbox over: its first call opens a channel
// (the keeper's generation fence), the old holder's exec ends transient
// with its tree killed, and the old holder's next call takes it back.
func TestNewResidentTakesTheChannelOver(t *testing.T) {
	old := newTestProvider(t)
	id := createFor(t, old, testOwner("takeover"), protocol.Spec{Image: cluster.Image})
	proc, err := old.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"sleep", "314"}})
	if err != nil {
		t.Fatal(err)
	}
	go drain(proc)
	awaitSleeps(t, old, id, "314", 1, "the old holder's exec running")
	next := newTestProvider(t)
	awaitSleeps(t, next, id, "314", 0, "the old holder's exec after the takeover")
	if _, err := awaitWait(t, proc, "the fenced exec"); protocol.KindOf(err) != protocol.KindTransient {
		t.Fatalf("the old holder's exec after a takeover: %v (kind %s), want transient", err, protocol.KindOf(err))
	}
	if out, _, err := run(context.Background(), old, id, "echo", "back"); err != nil || out != "back\n" {
		t.Fatalf("the old holder after being fenced: %q %v", out, err)
	}
}

// An exec sees the container's environment (the image's and the pod's,
// as the exec subresource gives it) with its own laid over it, and starts
// in the container's working directory.
func TestChannelExecEnvironmentAndCwd(t *testing.T) {
	p := newTestProvider(t)
	id := createFor(t, p, testOwner("env"), protocol.Spec{Image: cluster.Image, Workdir: "/tmp", Env: map[string]string{"FROM_SPEC": "spec", "BOTH": "spec"}})
	proc, err := p.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"sh", "-c", "pwd; echo $FROM_SPEC $BOTH $PATH"}, Env: map[string]string{"BOTH": "exec"}})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(proc.Stdout())
	_, _ = io.Copy(io.Discard, proc.Stderr())
	if _, err := proc.Wait(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || lines[0] != "/tmp" || !strings.HasPrefix(lines[1], "spec exec /") {
		t.Fatalf("got %q, want the workdir, then spec exec and the image's PATH", out)
	}
}

// A terminal over the channel: one stream, a tty, and a resize the
// command sees.
func TestChannelTerminalResize(t *testing.T) {
	p := newTestProvider(t)
	id := createFor(t, p, testOwner("tty"), protocol.Spec{Image: cluster.Image})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	proc, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"sh", "-c", "stty size; read line; stty size"}, TTY: &protocol.WindowSize{Rows: 24, Cols: 80}})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := proc.(provider.Resizer)
	if !ok {
		t.Fatal("a terminal exec is not a Resizer")
	}
	buf := make([]byte, 256)
	var got strings.Builder
	for !strings.Contains(got.String(), "24 80") {
		n, err := proc.Stdout().Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("before the resize: %q %v", got.String(), err)
		}
	}
	if err := r.Resize(protocol.WindowSize{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	if _, err := proc.Stdin().Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(proc.Stdout())
	got.Write(rest)
	if st, err := proc.Wait(); err != nil || st.Code != 0 || !strings.Contains(got.String(), "40 120") {
		t.Fatalf("terminal: %q %+v %v", got.String(), st, err)
	}
}
