package docker

import (
	"bytes"
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/docker/internal/keeperproto"
)

// process is one running exec. Its output flows: hijacked connection ->
// stdcopy demux -> (stdout: the status gate) -> io.Pipe -> the resident.
// The pipes give backpressure: the engine's stream is read only as fast as
// the resident reads.
type process struct {
	p                *Provider
	sandbox, exec    string
	token            string
	hijack           client.HijackedResponse
	ctrl             *control
	stdin            *stdinWriter
	stdoutR, stderrR *io.PipeReader
	stdoutW, stderrW *io.PipeWriter
	gate             *statusGate
	held             *holdWriter
	streamDone       chan struct{} // the demux ended (EOF or error)
	activity         atomic.Int64  // unix nanos of the last output byte, or -1 while a write is blocked
	oomBefore        int64
	stopKill         func() bool
	killed           atomic.Bool
	killedAt         atomic.Int64
	waitOnce         sync.Once
	status           provider.ExitStatus
	err              error
}

func newProcess(p *Provider, sandbox, exec, token string, h client.HijackedResponse, withStdin bool) *process {
	pr := &process{p: p, sandbox: sandbox, exec: exec, token: token, hijack: h, ctrl: newControl(h.Conn), streamDone: make(chan struct{}), stopKill: func() bool { return true }}
	pr.stdoutR, pr.stdoutW = io.Pipe()
	pr.stderrR, pr.stderrW = io.Pipe()
	pr.held = &holdWriter{out: activityWriter{pr, pr.stderrW}}
	pr.gate = &statusGate{out: activityWriter{pr, pr.stdoutW}, status: make(chan []byte, 1), held: pr.held}
	if withStdin {
		pr.stdin = &stdinWriter{ctrl: pr.ctrl}
	}
	pr.activity.Store(time.Now().UnixNano())
	return pr
}

func (pr *process) Stdout() io.Reader { return pr.stdoutR }
func (pr *process) Stderr() io.Reader { return pr.stderrR }

func (pr *process) Stdin() io.WriteCloser {
	if pr.stdin == nil {
		return nil // a nil *stdinWriter in the interface would not be nil
	}
	return pr.stdin
}

// demux splits the engine's multiplexed stream until it ends. The readers
// always get a clean EOF: whether the stream ended well is for Wait to say
// (a broken connection surfaces there as a transient error).
func (pr *process) demux() {
	defer close(pr.streamDone)
	_, _ = stdcopy.StdCopy(pr.gate, pr.held, pr.hijack.Reader)
	pr.gate.end()
	pr.stdoutW.Close()
	pr.stderrW.Close()
}

// awaitStatus waits for the keeper's status line.
func (pr *process) awaitStatus(ctx context.Context) (keeperStatus, error) {
	select {
	case line := <-pr.gate.status:
		return parseStatus(line)
	case <-ctx.Done():
		return keeperStatus{}, ctx.Err()
	}
}

// abandon ends an exec that never got going: the keeper sees its control
// stream end and kills whatever it started.
func (pr *process) abandon() {
	pr.hijack.Close()
	pr.stdoutR.Close()
	pr.stderrR.Close()
	<-pr.streamDone
}

// kill asks the keeper to kill the whole tree. It never blocks for long: if
// a stdin write holds the connection, the Wait loop's fallback (a second
// exec running "keeper kill") takes over.
func (pr *process) kill() {
	if !pr.killed.CompareAndSwap(false, true) {
		return
	}
	pr.killedAt.Store(time.Now().UnixNano())
	_ = pr.ctrl.send(keeperproto.FrameKill, nil, time.Second)
}

// activityWriter records when output last moved, so the drain after the
// main process exits can tell a silent background child from a slow reader.
type activityWriter struct {
	pr *process
	w  io.Writer
}

func (a activityWriter) Write(b []byte) (int, error) {
	a.pr.activity.Store(-1)
	n, err := a.w.Write(b)
	a.pr.activity.Store(time.Now().UnixNano())
	return n, err
}

// statusGate holds back stdout until the keeper's status line has passed,
// then is transparent. Until then stderr is held in memory (holdWriter):
// the engine forwards stdout and stderr from separate pipes, so the child's
// first stderr bytes can overtake the status line, and blocking on them
// before anyone reads stderr would stall the status behind them. What is
// held is what the child wrote in the moment the engine took to forward one
// line: small.
type statusGate struct {
	out    io.Writer
	buf    []byte
	passed bool
	status chan []byte
	held   *holdWriter
}

func (g *statusGate) Write(b []byte) (int, error) {
	if g.passed {
		return g.out.Write(b)
	}
	g.buf = append(g.buf, b...)
	i := bytes.IndexByte(g.buf, '\n')
	if i < 0 && len(g.buf) < keeperproto.MaxStatusLine {
		return len(b), nil
	}
	if i < 0 {
		i = len(g.buf) - 1
	}
	g.passed = true
	g.status <- g.buf[:i+1]
	if err := g.held.release(); err != nil {
		return 0, err
	}
	if rest := g.buf[i+1:]; len(rest) > 0 {
		if _, err := g.out.Write(rest); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// end reports whatever arrived when the stream ended before a full line.
func (g *statusGate) end() {
	if !g.passed {
		g.passed = true
		g.status <- g.buf
	}
	_ = g.held.release()
}

// holdWriter buffers until released, then writes through. Both methods run
// on the demux goroutine.
type holdWriter struct {
	out      io.Writer
	buf      []byte
	released bool
}

func (h *holdWriter) Write(b []byte) (int, error) {
	if h.released {
		return h.out.Write(b)
	}
	h.buf = append(h.buf, b...)
	return len(b), nil
}

func (h *holdWriter) release() error {
	if h.released {
		return nil
	}
	h.released = true
	if len(h.buf) == 0 {
		return nil
	}
	_, err := h.out.Write(h.buf)
	h.buf = nil
	return err
}
