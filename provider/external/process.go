package external

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/wire"
)

// stdinChunk is the most one exec/stdin carries.
const stdinChunk = 1 << 20

// Exec starts argv on the provider; output flows under a credit window.
func (p *Provider) Exec(ctx context.Context, sandboxID string, req provider.ExecRequest) (provider.Process, error) {
	if err := provider.RefuseUnannounced(p.Info(), &req, nil); err != nil {
		return nil, err
	}
	c, err := p.current(ctx)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.execSeq++
	id := "x" + strconv.FormatUint(p.execSeq, 10)
	e := newProcess(p, c, id, ctx)
	p.execs[id] = e
	p.mu.Unlock()
	params := wire.ExecStartParams{ExecID: id, SandboxID: sandboxID, Argv: req.Argv, Env: req.Env, Cwd: req.Cwd, Stdin: req.Stdin, Exclusive: req.Exclusive,
		User: req.User, TTY: req.TTY}
	if params.Env == nil {
		params.Env = map[string]string{}
	}
	if err := p.callOn(ctx, c, wire.MethodExecStart, params, nil); err != nil {
		p.forget(id)
		return nil, err
	}
	if req.Stdin || req.TTY != nil {
		e.stdin = &stdinWriter{e: e}
	}
	go e.watch(ctx)
	return e, nil
}

func (p *Provider) forget(id string) {
	p.mu.Lock()
	delete(p.execs, id)
	p.mu.Unlock()
}

// process is one exec as the resident sees it.
type process struct {
	p      *Provider
	child  *child
	id     string
	ctx    context.Context
	stdout *outBuffer
	stderr *outBuffer
	stdin  *stdinWriter
	// ordered, for an attachment, keeps the chunks in the provider's order
	// with their offsets, in place of stdout and stderr.
	ordered *chunkQueue

	mu      sync.Mutex
	used    int64 // bytes received and not yet granted back
	granted int64 // bytes read by the resident since the last credit
	done    chan struct{}
	status  provider.ExitStatus
	err     error
}

func newProcess(p *Provider, c *child, id string, ctx context.Context) *process {
	e := &process{p: p, child: c, id: id, ctx: ctx, done: make(chan struct{})}
	e.stdout = newOutBuffer(e)
	e.stderr = newOutBuffer(e)
	return e
}

func (e *process) Stdout() io.Reader { return e.stdout }
func (e *process) Stderr() io.Reader { return e.stderr }

func (e *process) Stdin() io.WriteCloser {
	if e.stdin == nil {
		return nil
	}
	return e.stdin
}

// output is called on the read loop: it never blocks. Output past the
// window is the provider breaking the protocol, and ends the exec.
func (e *process) output(stream string, data []byte, offset int64) {
	e.mu.Lock()
	e.used += int64(len(data))
	over := e.used > e.p.window
	e.mu.Unlock()
	if over {
		e.fail(protocol.Errorf(protocol.KindTransient, "provider %s sent more output than its %d byte window", e.p.name, e.p.window))
		e.kill()
		return
	}
	switch {
	case e.ordered != nil:
		e.ordered.push(provider.OutputChunk{Stream: stream, Offset: offset, Data: data})
	case stream == protocol.StreamStderr:
		e.stderr.push(data)
	default:
		e.stdout.push(data)
	}
}

// consumed is called as the resident reads output: credit goes back in
// quarters of the window, so the provider is rarely idle and a slow host
// stalls only this exec.
func (e *process) consumed(n int) {
	e.mu.Lock()
	e.used -= int64(n)
	e.granted += int64(n)
	grant := int64(0)
	if e.granted >= e.p.window/4 {
		grant, e.granted = e.granted, 0
	}
	e.mu.Unlock()
	if grant > 0 {
		_ = e.child.conn.Notify(context.Background(), wire.NotifyExecCredit, wire.ExecCredit{ExecID: e.id, Bytes: grant})
	}
}

func (e *process) exit(m wire.ExecExit) {
	e.finish(provider.ExitStatus{Code: m.Code, Signal: m.Signal, OOMKilled: m.OOMKilled, Killed: m.Killed, TimedOut: m.TimedOut}, fromWireError(m.Error))
}

func (e *process) fail(err error) {
	e.finish(provider.ExitStatus{Code: -1}, err)
}

func (e *process) finish(st provider.ExitStatus, err error) {
	e.mu.Lock()
	select {
	case <-e.done:
		e.mu.Unlock()
		return
	default:
	}
	e.status, e.err = st, err
	close(e.done)
	e.mu.Unlock()
	e.stdout.close()
	e.stderr.close()
	if e.ordered != nil {
		e.ordered.close()
	}
	e.p.forget(e.id)
}

func (e *process) kill() {
	ctx, cancel := context.WithTimeout(context.Background(), e.p.callTimeout)
	defer cancel()
	_ = e.p.callOn(ctx, e.child, wire.MethodExecKill, wire.ExecIDParams{ExecID: e.id}, nil)
}

// watch kills the exec when the resident's context ends, and holds the
// provider to its deadline for the exit that must follow.
func (e *process) watch(ctx context.Context) {
	select {
	case <-e.done:
		return
	case <-ctx.Done():
	}
	e.kill()
	select {
	case <-e.done:
	case <-e.child.gone:
	case <-timeAfter(e.p.callTimeout):
		e.p.logger().Error("provider did not end a killed exec in time; restarting it", stringField("exec_id", e.id))
		e.child.kill()
		e.fail(protocol.Errorf(protocol.KindTransient, "provider %s did not end the killed exec within %s; it was restarted", e.p.name, e.p.callTimeout))
	}
}

func (e *process) Wait() (provider.ExitStatus, error) {
	<-e.done
	return e.status, e.err
}

type stdinWriter struct {
	e      *process
	closed bool
}

func (w *stdinWriter) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		n := min(len(b), stdinChunk)
		// No provider deadline here: a process that does not read its stdin
		// holds the write, as a pipe would; the exec's context still ends it.
		err := w.e.p.callStdin(w.e, wire.ExecStdinParams{ExecID: w.e.id, Data: b[:n]})
		if err != nil {
			return written, err
		}
		written += n
		b = b[n:]
	}
	return written, nil
}

func (w *stdinWriter) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	return w.e.p.callStdin(w.e, wire.ExecStdinParams{ExecID: w.e.id, EOF: true})
}

func (p *Provider) callStdin(e *process, params wire.ExecStdinParams) error {
	// Bounded by the exec's own context and the child's life, not by the
	// exec's end: an EOF's answer may come after the exit it caused.
	var id jsonrpc2.ID
	call, err := e.child.conn.DispatchCall(e.ctx, wire.MethodExecStdin, params, jsonrpc2.PickID(p.nextID(&id)))
	if err != nil {
		return fmt.Errorf("exec stdin: %w", io.ErrClosedPipe)
	}
	if err := call.Wait(e.ctx, nil); err != nil {
		return fmt.Errorf("exec stdin: %w", io.ErrClosedPipe)
	}
	return nil
}
