package external

import (
	"context"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/wire"
)

// StartDetached starts a detached exec on the provider (exec/start_detached).
func (p *Provider) StartDetached(ctx context.Context, sandboxID string, req provider.ExecRequest) error {
	params := wire.DetachedStartParams{SandboxID: sandboxID, ExecID: req.ID, Argv: req.Argv, Env: req.Env, Cwd: req.Cwd, Stdin: req.Stdin, Exclusive: req.Exclusive,
		User: req.User, TTY: req.TTY}
	if params.Env == nil {
		params.Env = map[string]string{}
	}
	if !req.Deadline.IsZero() {
		params.DeadlineUnixMS = req.Deadline.UnixMilli()
	}
	return p.call(ctx, wire.MethodExecStartDetached, params, nil)
}

// Attach opens an attachment: an exec-like stream under an id of the
// resident's, whose chunks keep their order and offsets.
func (p *Provider) Attach(ctx context.Context, sandboxID, execID string, offset int64) (provider.Attachment, error) {
	c, err := p.current(ctx)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.execSeq++
	id := "a" + strconv.FormatUint(p.execSeq, 10)
	e := newProcess(p, c, id, context.WithoutCancel(ctx))
	e.ordered = newChunkQueue(e)
	p.execs[id] = e
	p.mu.Unlock()
	var res wire.AttachResult
	if err := p.callOn(ctx, c, wire.MethodExecAttach, wire.AttachParams{AttachID: id, SandboxID: sandboxID, ExecID: execID, Offset: offset}, &res); err != nil {
		p.forget(id)
		return nil, err
	}
	a := &attachment{e: e, info: provider.AttachInfo{Offset: res.Offset, Lost: res.Lost}}
	if res.Stdin {
		e.stdin = &stdinWriter{e: e}
	}
	return a, nil
}

func (p *Provider) ListExecs(ctx context.Context, sandboxID string) ([]protocol.ExecInfo, error) {
	var res wire.ListExecsResult
	if err := p.call(ctx, wire.MethodExecList, wire.SandboxParams{SandboxID: sandboxID}, &res); err != nil {
		return nil, err
	}
	return res.Execs, nil
}

func (p *Provider) KillExec(ctx context.Context, sandboxID, execID string) error {
	return p.call(ctx, wire.MethodExecKillDetached, wire.DetachedExecParams{SandboxID: sandboxID, ExecID: execID}, nil)
}

// attachment is provider.Attachment over an exec-like stream.
type attachment struct {
	e    *process
	info provider.AttachInfo
	once sync.Once
}

func (a *attachment) Next() (provider.OutputChunk, error) { return a.e.ordered.pop() }

// Resize reaches a detached tty exec through its attachment.
func (a *attachment) Resize(size protocol.WindowSize) error { return a.e.Resize(size) }
func (a *attachment) Info() provider.AttachInfo             { return a.info }

func (a *attachment) Exit() (provider.ExitStatus, bool) {
	select {
	case <-a.e.done:
		return a.e.status, a.e.err == nil
	default:
		return provider.ExitStatus{}, false
	}
}

func (a *attachment) Stdin() io.WriteCloser {
	if a.e.stdin == nil {
		return nil
	}
	return a.e.stdin
}

// Close releases the attachment on the provider (the exec goes on) and
// ends it here at once, whatever the provider answers.
func (a *attachment) Close() error {
	a.once.Do(func() {
		select {
		case <-a.e.done:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), min(a.e.p.callTimeout, 10*time.Second))
		defer cancel()
		_ = a.e.p.callOn(ctx, a.e.child, wire.MethodExecRelease, wire.ExecIDParams{ExecID: a.e.id}, nil)
		a.e.finish(provider.ExitStatus{}, errReleased)
	})
	return nil
}

var errReleased = protocol.Errorf(protocol.KindCancelled, "attachment released")

// chunkQueue holds an attachment's chunks between the read loop and the
// resident's pump; the credit window bounds it, as outBuffer.
type chunkQueue struct {
	e      *process
	mu     sync.Mutex
	cond   *sync.Cond
	chunks []provider.OutputChunk
	closed bool
}

func newChunkQueue(e *process) *chunkQueue {
	q := &chunkQueue{e: e}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *chunkQueue) push(c provider.OutputChunk) {
	if len(c.Data) == 0 {
		return
	}
	q.mu.Lock()
	q.chunks = append(q.chunks, c)
	q.mu.Unlock()
	q.cond.Signal()
}

func (q *chunkQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// pop returns the next chunk; at the end io.EOF when the exec ended, or the
// error that ended the attachment.
func (q *chunkQueue) pop() (provider.OutputChunk, error) {
	q.mu.Lock()
	for len(q.chunks) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.chunks) == 0 {
		q.mu.Unlock()
		if err := q.e.err; err != nil {
			return provider.OutputChunk{}, err
		}
		return provider.OutputChunk{}, io.EOF
	}
	c := q.chunks[0]
	q.chunks[0] = provider.OutputChunk{}
	q.chunks = q.chunks[1:]
	q.mu.Unlock()
	q.e.consumed(len(c.Data))
	return c, nil
}
