package channel

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// ExitStatus is how an exec ended.
type ExitStatus struct {
	// Code is what a shell reports: the exit code, or 128+n for signal n.
	Code int
	// Signal names the signal that ended the command ("SIGKILL"), if one did.
	Signal string
	// OOMKilled: the kernel's OOM killer killed a process of the sandbox
	// while the command ran, and the command died of SIGKILL.
	OOMKilled bool
	// Killed: the keeper killed the tree (Kill, the deadline, an
	// exclusive exec, the channel that started it breaking).
	Killed bool
	// TimedOut: the deadline killed it (Killed is set too).
	TimedOut bool
}

func exitStatus(e *keeperproto.Exit) ExitStatus {
	return ExitStatus{Code: e.Code, Signal: e.Signal, OOMKilled: e.OOMKilled, Killed: e.Killed, TimedOut: e.TimedOut}
}

// Exec is one running command (or a detached one attached to).
type Exec struct {
	st        *cstream
	id        string
	stdin     io.WriteCloser
	closeOnce sync.Once
}

// Exec starts s and returns once it runs, or with a *StartError saying why
// it cannot, or ErrBroken.
func (c *Conn) Exec(ctx context.Context, s ExecSpec) (*Exec, error) {
	req := keeperproto.Exec{ID: s.ID, Argv: s.Argv, Env: s.Env, Cwd: s.Cwd, User: s.User, Stdin: s.Stdin,
		Exclusive: s.Exclusive, Detach: s.Detach, Buffer: s.Buffer, Window: c.window}
	if req.Env == nil {
		req.Env = []string{}
	}
	if s.TTY != nil {
		req.TTY = &keeperproto.WindowSize{Rows: s.TTY.Rows, Cols: s.TTY.Cols}
	}
	if !s.Deadline.IsZero() {
		req.DeadlineMS = max(1, time.Until(s.Deadline).Milliseconds())
	}
	st, err := c.newStream(s.Detach)
	if err != nil {
		return nil, err
	}
	// With many streams open, a new one starts at its share (Conn.share).
	if w := c.share(c.window); w < c.window {
		st.setWindow(w)
		req.Window = w
	}
	if err := c.sendJSON(keeperproto.ChanExec, st.id, req); err != nil {
		c.forget(st)
		return nil, err
	}
	f, err := st.answer(ctx, true)
	if err != nil {
		return nil, err
	}
	if f.Type == keeperproto.ChanFailure {
		var fail keeperproto.Failure
		_ = json.Unmarshal(f.Payload, &fail)
		return nil, &StartError{Reason: fail.Reason, Kind: fail.Kind, Field: fail.Field, Msg: fail.Msg}
	}
	var started keeperproto.Started
	if f.Type != keeperproto.ChanStarted || json.Unmarshal(f.Payload, &started) != nil {
		return nil, fmt.Errorf("%w: unexpected answer %q to exec", ErrBroken, f.Type)
	}
	e := &Exec{st: st, id: started.ExecID}
	if s.Stdin || s.TTY != nil {
		e.stdin = &stdinWriter{st: st}
	}
	return e, nil
}

// Attach streams a detached exec's output from offset (bytes over stdout
// and stderr together since it started): the kept part first, then live,
// then its exit status. An offset older than the ring holds starts at the
// oldest byte kept (AttachInfo.Offset says where). ErrUnknownExec for an
// id the keeper does not hold. Stdin writes to the exec's stdin if it has
// one, and is nil if it has none (AttachInfo.Stdin), as for Exec.
func (c *Conn) Attach(ctx context.Context, execID string, offset int64) (*Exec, AttachInfo, error) {
	st, err := c.newStream(true)
	if err != nil {
		return nil, AttachInfo{}, err
	}
	window := c.share(c.window)
	st.setWindow(window)
	if err := c.sendJSON(keeperproto.ChanAttach, st.id, keeperproto.Attach{ExecID: execID, Offset: offset, Window: window}); err != nil {
		c.forget(st)
		return nil, AttachInfo{}, err
	}
	f, err := st.answer(ctx, false)
	if err != nil {
		return nil, AttachInfo{}, err
	}
	if f.Type == keeperproto.ChanFailure {
		var fail keeperproto.Failure
		_ = json.Unmarshal(f.Payload, &fail)
		if fail.Kind == keeperproto.KindNotFound {
			return nil, AttachInfo{}, fmt.Errorf("%w: %s", ErrUnknownExec, execID)
		}
		return nil, AttachInfo{}, fmt.Errorf("keeper: attach: %s", fail.Msg)
	}
	var a keeperproto.Attached
	if f.Type != keeperproto.ChanAttached || json.Unmarshal(f.Payload, &a) != nil {
		return nil, AttachInfo{}, fmt.Errorf("%w: unexpected answer %q to attach", ErrBroken, f.Type)
	}
	// The replay's offset was set by the read loop as Attached went by,
	// before the chunks after it (cstream.deliver): set here, it would come
	// after chunks already queued.
	info := AttachInfo{Offset: a.Offset, End: a.End, Buffer: a.Buffer, Dropped: a.Dropped, Running: a.Running,
		// A keeper that does not say gets a writer, as before.
		Stdin: a.Stdin || !c.Supports(keeperproto.FeatureAttachStdin)}
	if a.Exit != nil {
		x := exitStatus(a.Exit)
		info.Exit = &x
	}
	e := &Exec{st: st, id: a.ExecID}
	if info.Stdin {
		e.stdin = &stdinWriter{st: st}
	}
	return e, info, nil
}

// ID is the keeper's id for the exec (what Attach and ListExecs use).
func (e *Exec) ID() string { return e.id }

// Stdout is the command's stdout (a TTY's whole output). Read it, and
// Stderr, or the exec stalls once its credit is spent. For a detached or
// attached exec, use either Next or Stdout and Stderr, not both.
func (e *Exec) Stdout() io.Reader { e.st.split(); return e.st.stdout }

// Stderr is the command's stderr; empty for a TTY.
func (e *Exec) Stderr() io.Reader { e.st.split(); return e.st.stderr }

// Chunk is a piece of a detached exec's output, in the order the keeper
// read it. Offset counts the exec's output, both streams together, from
// its start.
type Chunk struct {
	Stream string // "stdout" or "stderr"
	Offset int64
	Data   []byte
}

// Next returns a detached or attached exec's output one chunk at a time,
// in order, each with its stream and offset; io.EOF once the exec ended
// and everything was returned (Wait then has its status), ErrBroken when
// the channel broke. Not for an exec started without Detach.
func (e *Exec) Next() (Chunk, error) {
	if e.st.chunks == nil {
		return Chunk{}, errors.New("keeper channel: Next is for detached execs")
	}
	return e.st.chunks.next(true)
}

// Stdin is the command's stdin; nil unless ExecSpec.Stdin or TTY. Close
// sends EOF.
func (e *Exec) Stdin() io.WriteCloser { return e.stdin }

// Signal sends a signal ("SIGTERM", "TERM", "15") to the command's main
// process; an unknown name is an error here, not a signal dropped there.
func (e *Exec) Signal(name string) error {
	if _, ok := keeperproto.SignalNumber(name); !ok {
		return fmt.Errorf("keeper channel: unknown signal %q", name)
	}
	return e.st.c.send(keeperproto.ChanSignal, e.st.id, []byte(name))
}

// Resize sets a TTY exec's window size.
func (e *Exec) Resize(rows, cols uint16) error {
	p := binary.BigEndian.AppendUint16(nil, rows)
	return e.st.c.send(keeperproto.ChanResize, e.st.id, binary.BigEndian.AppendUint16(p, cols))
}

// Kill kills the exec's whole tree; Wait then reports Killed.
func (e *Exec) Kill() error { return e.st.c.send(keeperproto.ChanKill, e.st.id, nil) }

// Wait waits for the exit status, which the keeper sends after the last
// output. An error that is ErrBroken when the channel broke first.
func (e *Exec) Wait() (ExitStatus, error) {
	<-e.st.exited
	e.st.mu.Lock()
	x, err := e.st.exit, e.st.endErr
	e.st.mu.Unlock()
	if x != nil {
		return exitStatus(x), nil
	}
	if err == nil {
		err = fmt.Errorf("%w: the stream ended without an exit status", ErrBroken)
	}
	return ExitStatus{}, err
}

// Release stops receiving this exec's output without ending it: a detached
// exec goes on filling its ring. For a non-detached exec it is Kill.
func (e *Exec) Release() error {
	err := e.st.c.send(keeperproto.ChanRelease, e.st.id, nil)
	e.st.broken(errReleased)
	e.st.c.forget(e.st)
	return err
}

var errReleased = errors.New("keeper channel: exec released")
