package client

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/resident-dev/resident/protocol"
)

// Streams connects an exec to the host's I/O. Every field may be nil.
type Streams struct {
	// Stdin, when set, is forwarded to the process with exec/stdin in
	// chunks as it is read, and its end (or a read error) closes the
	// process's stdin (eof: true). Nil leaves the process's stdin closed,
	// unless ExecParams.Stdin is true, in which case the host drives it
	// itself with WriteStdin.
	Stdin io.Reader
	// Stdout and Stderr receive the process's output bytes exactly as sent
	// (binary-safe; scrubbed by the resident), in order within each stream.
	// They are written from the client's read loop: a slow writer slows
	// every call on this client. A write error kills the exec.
	Stdout, Stderr io.Writer
	// Resume, when set, is called on the read loop after each chunk of a
	// detached exec (ExecParams.Detach, AttachExec) with the offset where
	// AttachExec would resume right after it: keep the last one to follow
	// the exec again from another session.
	Resume func(offset int64)
}

// stdinChunk is the most stdin bytes sent in one exec/stdin: small enough
// to keep frames far under max_frame_bytes once base64-encoded, large enough
// that a big upload is not thousands of round trips.
const stdinChunk = 256 << 10

// Exec runs p.Argv in sandbox p.SandboxID and returns when the main process
// has ended (sandbox/exec). Output streams to s while it runs; every byte
// has been written when Exec returns. A zero p.ExecID is filled in with one
// unique to this client.
//
// The process's own timeout, exit code and signal are in the result, not an
// error. Cancelling ctx sends $/cancelRequest: the process tree is killed
// and the error matches ErrCancelled and ctx's error.
//
// When writing to s.Stdout or s.Stderr fails, the exec is killed and Exec
// returns its result together with the write error.
//
// Exec does not wait for a Stdin Read that is still blocked when the process
// ends (a terminal, say); the forwarding goroutine exits once that Read
// returns.
func (c *Client) Exec(ctx context.Context, p protocol.ExecParams, s Streams) (*protocol.ExecResult, error) {
	if p.ExecID == "" {
		p.ExecID = c.newID("exec")
	}
	if s.Stdin != nil {
		p.Stdin = true
	}
	return c.follow(ctx, protocol.MethodSandboxExec, p.ExecID, p, s)
}

// AttachExec follows a detached exec from p.Offset (exec/attach), from any
// session of the install that started it: its kept output, then its live
// output, until it ends (the result) or ctx is cancelled (the exec goes on).
// s.Resume reports where to attach again next time.
func (c *Client) AttachExec(ctx context.Context, p protocol.ExecAttachParams, s Streams) (*protocol.ExecResult, error) {
	return c.follow(ctx, protocol.MethodExecAttach, p.ExecID, p, s)
}

// StartExec starts a detached exec and returns once it runs (exec/start):
// a background job to follow later with AttachExec, from this client or
// another session of the install. A zero p.ExecID is filled in.
func (c *Client) StartExec(ctx context.Context, p protocol.ExecParams) (*protocol.ExecStartResult, error) {
	if p.ExecID == "" {
		p.ExecID = c.newID("exec")
	}
	var res protocol.ExecStartResult
	if err := c.call(ctx, protocol.MethodExecStart, p, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// ListExecs lists a sandbox's detached execs (sandbox/list_execs).
func (c *Client) ListExecs(ctx context.Context, sandboxID string) ([]protocol.ExecInfo, error) {
	var res protocol.ListExecsResult
	if err := c.call(ctx, protocol.MethodSandboxExecs, protocol.SandboxIDParams{SandboxID: sandboxID}, &res); err != nil {
		return nil, err
	}
	return res.Execs, nil
}

// KillDetached kills a detached exec that this client does not follow.
func (c *Client) KillDetached(ctx context.Context, sandboxID, execID string) error {
	return c.call(ctx, protocol.MethodExecKill, protocol.ExecKillParams{ExecID: execID, SandboxID: sandboxID}, nil)
}

// follow runs one request that streams an exec's output (sandbox/exec,
// exec/attach) and awaits its result.
func (c *Client) follow(ctx context.Context, method, execID string, params any, s Streams) (*protocol.ExecResult, error) {
	sink := &execSink{stdout: s.Stdout, stderr: s.Stderr, resume: s.Resume}
	// Called on the read loop, so it only writes the kill; its answer is
	// not awaited.
	sink.onError = func() { _, _ = c.conn.start(protocol.MethodExecKill, protocol.ExecKillParams{ExecID: execID}) }
	if err := c.conn.addExec(execID, sink); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	defer c.conn.removeExec(execID)

	pc, err := c.start(ctx, method, params)
	if err != nil {
		return nil, err
	}
	// The resident registers the exec id as soon as it reads sandbox/exec,
	// so stdin may follow right behind it.
	stop := make(chan struct{})
	defer close(stop)
	if s.Stdin != nil {
		go c.forwardStdin(execID, s.Stdin, stop)
	}
	var res protocol.ExecResult
	if err := c.await(ctx, pc, &res); err != nil {
		return nil, err
	}
	if werr := sink.failure(); werr != nil {
		return &res, fmt.Errorf("%s %s: %w", method, execID, werr)
	}
	return &res, nil
}

// forwardStdin copies r into the exec, one exec/stdin at a time (each
// answer means the bytes are in the pipe, which gives backpressure), and
// closes the process's stdin at the end of r. It stops quietly when the exec
// has ended (the resident answers conflict or invalid_request).
func (c *Client) forwardStdin(execID string, r io.Reader, stop <-chan struct{}) {
	buf := make([]byte, stdinChunk)
	for {
		n, rerr := r.Read(buf)
		select {
		case <-stop:
			return
		default:
		}
		eof := rerr != nil
		if n == 0 && !eof {
			continue
		}
		if err := c.WriteStdin(context.Background(), protocol.ExecStdinParams{ExecID: execID, Data: buf[:n], EOF: eof}); err != nil || eof {
			return
		}
	}
}

// WriteStdin sends bytes to a running exec started with stdin
// (exec/stdin). It returns once they are in the process's stdin pipe.
// p.EOF closes the process's stdin after the bytes.
func (c *Client) WriteStdin(ctx context.Context, p protocol.ExecStdinParams) error {
	return c.call(ctx, protocol.MethodExecStdin, p, nil)
}

// Resize changes the terminal size of an exec started with ExecParams.TTY
// (exec/resize); the command gets SIGWINCH. It waits for the exec to have
// started. An exec without a terminal is invalid_request, one that has
// ended conflict.
func (c *Client) Resize(ctx context.Context, execID string, size protocol.WindowSize) error {
	return c.call(ctx, protocol.MethodExecResize, protocol.ExecResizeParams{ExecID: execID, Rows: size.Rows, Cols: size.Cols}, nil)
}

// Kill kills an exec's whole process tree (exec/kill). The exec's own Exec
// call then returns a result with Killed set. Killing an exec that has
// ended is a no-op.
func (c *Client) Kill(ctx context.Context, execID string) error {
	return c.call(ctx, protocol.MethodExecKill, protocol.ExecKillParams{ExecID: execID}, nil)
}

// execSink receives one exec's output on the read loop.
type execSink struct {
	stdout, stderr io.Writer
	resume         func(int64)
	onError        func()

	mu  sync.Mutex
	err error
}

func (s *execSink) write(stream string, data []byte, offset *int64) {
	if offset != nil && s.resume != nil {
		defer s.resume(*offset) // once the bytes are written
	}
	w := s.stdout
	if stream == protocol.StreamStderr {
		w = s.stderr
	}
	s.mu.Lock()
	failed := s.err != nil
	s.mu.Unlock()
	if w == nil || failed {
		return
	}
	if _, err := w.Write(data); err != nil {
		s.mu.Lock()
		s.err = fmt.Errorf("writing %s: %w", stream, err)
		s.mu.Unlock()
		s.onError()
	}
}

func (s *execSink) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
