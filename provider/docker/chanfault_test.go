package docker

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// startReady starts script, which must print "ready" first, and returns
// once it did, with the rest of its stdout.
func startReady(t *testing.T, p *Provider, id, script string) (provider.Process, *bufio.Reader) {
	t.Helper()
	proc, err := p.Exec(testCtx(t), id, provider.ExecRequest{Argv: []string{"sh", "-c", script}})
	if err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(proc.Stdout())
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	return proc, out
}

// The attach connection broken under an exec: that exec is transient, the
// next exec reconnects (taking the channel over, which also has the keeper
// kill what the broken channel left), and the sandbox is whole.
func TestChannelBrokenMidExec(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	proc, out := startReady(t, p, id, "echo ready; exec sleep 300")
	ch := p.chans.get(id)
	ch.mu.Lock()
	rw := ch.rw
	ch.mu.Unlock()
	_ = rw.att.Conn.Close() // the network connection, not the Conn: as a dropped TCP link
	go func() { _, _ = io.Copy(io.Discard, out) }()
	go func() { _, _ = io.Copy(io.Discard, proc.Stderr()) }()
	_, err := proc.Wait()
	if protocol.KindOf(err) != protocol.KindTransient {
		t.Fatalf("the broken exec: %v; want transient", err)
	}
	if got := sh(t, p, id, "echo again"); got != "again\n" {
		t.Fatalf("the next exec: %q", got)
	}
	// The keeper killed the exec of the broken channel once the next
	// holder came: no sleep is left.
	if got := sh(t, p, id, "ps -o comm | grep -c '^sleep' || true"); got != "0\n" {
		t.Errorf("sleeps left after the broken channel's takeover: %q", got)
	}
}

// A process of the sandbox, root without capabilities, cannot kill, stop
// or trace the keeper, nor open its descriptors, memory or environment,
// nor write into its channel through /proc.
func TestChannelKeeperUnreachableFromInside(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	script := `
kill -9 1 2>/dev/null && echo killed
kill -STOP 1 2>/dev/null && echo stopped
for f in /proc/1/fd/0 /proc/1/fd/1 /proc/1/mem /proc/1/environ; do
	cat "$f" </dev/null >/dev/null 2>&1 && echo "read $f"
	echo RKc1forged 2>/dev/null >"$f" && echo "wrote $f"
done
echo done`
	if got := sh(t, p, id, script); got != "done\n" {
		t.Errorf("from inside the sandbox: %q; want nothing reached the keeper", got)
	}
	if got := sh(t, p, id, "echo alive"); got != "alive\n" {
		t.Errorf("the channel after the attempts: %q", got)
	}
}

// A new resident (a new Provider) takes a sandbox over mid-stream: the old
// holder's exec ends transient (fenced), the detached exec goes on and the
// new holder attaches to it.
func TestChannelTakeoverByANewResident(t *testing.T) {
	first, _ := newTestProvider(t)
	id := create(t, first, testOwner(t), protocol.Spec{}, nil)
	if err := first.StartDetached(testCtx(t), id, provider.ExecRequest{Argv: []string{"sh", "-c", "echo one; read x; echo two-$x"}, Stdin: true, ID: "job"}); err != nil {
		t.Fatal(err)
	}
	proc, out := startReady(t, first, id, "echo ready; exec sleep 300")
	go func() { _, _ = io.Copy(io.Discard, out) }()
	go func() { _, _ = io.Copy(io.Discard, proc.Stderr()) }()

	second, _ := newTestProvider(t)
	a, err := second.Attach(testCtx(t), id, "job", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := proc.Wait(); protocol.KindOf(err) != protocol.KindTransient || !strings.Contains(err.Error(), "took this sandbox's channel over") {
		t.Fatalf("the first resident's exec: %v; want transient, taken over", err)
	}
	c, err := a.Next()
	if err != nil || string(c.Data) != "one\n" {
		t.Fatalf("the detached exec's replay: %+v %v", c, err)
	}
	if a.Stdin() == nil {
		t.Fatal("the new resident's attachment has no stdin")
	}
	_, _ = a.Stdin().Write([]byte("x\n"))
	if c, err := a.Next(); err != nil || string(c.Data) != "two-x\n" {
		t.Fatalf("after stdin: %+v %v", c, err)
	}
	if _, err := a.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v", err)
	}
}

// A host that stops reading one of two streaming execs stalls that one
// only: the other streams to its end.
func TestChannelStalledReaderStallsOnlyItsExec(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	const size = 16 << 20 // far beyond every window and buffer on the way
	stalled, err := p.Exec(testCtx(t), id, provider.ExecRequest{Argv: []string{"head", "-c", "16777216", "/dev/zero"}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, stalled.Stderr()) }()
	// Read a little of the stalled one, so its output is surely flowing,
	// then stop reading it.
	if _, err := io.ReadFull(stalled.Stdout(), make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	r := run(t, testCtx(t), p, id, provider.ExecRequest{Argv: []string{"head", "-c", "16777216", "/dev/zero"}})
	if r.err != nil || r.status.Code != 0 || len(r.stdout) != size {
		t.Fatalf("the read exec: %d bytes, %+v %v", len(r.stdout), r.status, r.err)
	}
	n, _ := io.Copy(io.Discard, stalled.Stdout())
	if st, err := stalled.Wait(); err != nil || st.Code != 0 || n+4096 != size {
		t.Fatalf("the stalled exec, read at last: %d bytes, %+v %v", n+4096, st, err)
	}
}
