package external

import (
	"io"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// TestASlowReaderStallsOnlyItsOwnExec: one exec floods stdout and nobody
// reads it; another exec on the same provider still runs to its end, and
// what the resident holds for the stalled one stays within its window.
func TestASlowReaderStallsOnlyItsOwnExec(t *testing.T) {
	p, err := openFake(t, "none", DefaultCallTimeout, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := bg(t)
	id, err := p.Create(ctx, protocol.Spec{}, owner, nil)
	if err != nil {
		t.Fatal(err)
	}
	flood, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"sh", "-c", "head -c 67108864 /dev/zero"}})
	if err != nil {
		t.Fatal(err)
	}
	// Read one byte, so the flood is known to be running, then stop reading.
	if _, err := io.ReadFull(flood.Stdout(), make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	quick, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"sh", "-c", "echo beside"}})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(quick.Stdout())
	if st, err := quick.Wait(); err != nil || st.Code != 0 || string(out) != "beside\n" {
		t.Fatalf("the exec beside a stalled one: %q %+v %v", out, st, err)
	}
	e := flood.(*process)
	e.mu.Lock()
	held := e.used
	e.mu.Unlock()
	if held > e.p.window {
		t.Fatalf("the resident holds %d bytes of a stalled exec, past its %d byte window", held, e.p.window)
	}
	if _, err := p.Terminate(ctx, id); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, flood.Stdout())
	_, _ = flood.Wait()
}
