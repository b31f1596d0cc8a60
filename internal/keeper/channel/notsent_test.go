package channel

import (
	"errors"
	"io"
	"sync/atomic"
	"testing"
)

// failingWrites is a transport whose writes start failing on demand, as a
// stream does that its holder closed before the Conn's reader saw the end:
// written is how many bytes the failing write reports it took.
type failingWrites struct {
	io.ReadWriteCloser
	failing atomic.Bool
	written int
}

func (f *failingWrites) Write(p []byte) (int, error) {
	if f.failing.Load() {
		return min(f.written, len(p)), io.ErrClosedPipe
	}
	return f.ReadWriteCloser.Write(p)
}

// An exec whose request never left (the transport refused its first byte,
// or the channel was already broken) is NotSent, so a provider may send it
// again on a new channel; one that may have gone out in part is not.
func TestNotSentOnlyWhenNothingWentOut(t *testing.T) {
	for _, tc := range []struct {
		name    string
		written int
		notSent bool
	}{
		{"nothing written", 0, true},
		{"part written", 7, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := startStdio(t)
			rw := &failingWrites{ReadWriteCloser: pipeRW{Reader: k.out, WriteCloser: k.stdin, rc: k.out}, written: tc.written}
			c, err := Open(ctx(t), rw, Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			rw.failing.Store(true)
			_, err = c.Exec(ctx(t), ExecSpec{Argv: []string{"true"}, Env: testEnv})
			if !errors.Is(err, ErrBroken) || NotSent(err) != tc.notSent {
				t.Fatalf("exec on a failing transport: %v, NotSent %v, want %v", err, NotSent(err), tc.notSent)
			}
			// Broken now: whatever follows never leaves, whatever the write did.
			if _, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"true"}, Env: testEnv}); !errors.Is(err, ErrBroken) || !NotSent(err) {
				t.Fatalf("exec on a broken channel: %v, NotSent %v", err, NotSent(err))
			}
		})
	}
}
