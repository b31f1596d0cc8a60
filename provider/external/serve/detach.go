package serve

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/wire"
)

// detached serves the detached-exec methods from the provider's Detacher.
func (s *Server) detached(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	d, ok := s.prov.(provider.Detacher)
	if !ok || !s.prov.Info().Capabilities.Detach {
		return nil, protocol.Errorf(protocol.KindInvalidRequest, "this provider cannot detach execs")
	}
	switch req.Method {
	case wire.MethodExecStartDetached:
		p, err := decode[wire.DetachedStartParams](req)
		if err != nil {
			return nil, err
		}
		r := provider.ExecRequest{Argv: p.Argv, Env: p.Env, Cwd: p.Cwd, Stdin: p.Stdin, Exclusive: p.Exclusive, Detach: true, ID: p.ExecID,
			User: p.User, TTY: p.TTY}
		if p.DeadlineUnixMS > 0 {
			r.Deadline = time.UnixMilli(p.DeadlineUnixMS)
		}
		return wire.Empty{}, d.StartDetached(ctx, p.SandboxID, r)
	case wire.MethodExecAttach:
		p, err := decode[wire.AttachParams](req)
		if err != nil {
			return nil, err
		}
		return s.attach(ctx, conn, d, p)
	case wire.MethodExecRelease:
		p, err := decode[wire.ExecIDParams](req)
		if err != nil {
			return nil, err
		}
		if e := s.exec(p.ExecID); e != nil {
			e.cancel() // closes the attachment; its pump sends nothing more
		}
		return wire.Empty{}, nil
	case wire.MethodExecList:
		p, err := decode[wire.SandboxParams](req)
		if err != nil {
			return nil, err
		}
		execs, err := d.ListExecs(ctx, p.SandboxID)
		if execs == nil {
			execs = []protocol.ExecInfo{}
		}
		return wire.ListExecsResult{Execs: execs}, err
	}
	p, err := decode[wire.DetachedExecParams](req)
	if err != nil {
		return nil, err
	}
	return wire.Empty{}, d.KillExec(ctx, p.SandboxID, p.ExecID)
}

func (s *Server) attach(ctx context.Context, conn *jsonrpc2.Conn, d provider.Detacher, p *wire.AttachParams) (any, error) {
	if p.AttachID == "" {
		return nil, protocol.Errorf(protocol.KindInvalidRequest, "attach_id is required")
	}
	att, err := d.Attach(ctx, p.SandboxID, p.ExecID, p.Offset)
	if err != nil {
		return nil, err
	}
	released, release := context.WithCancel(context.Background())
	stop := context.AfterFunc(released, func() { _ = att.Close() })
	e := &execution{proc: attachedStdin{att}, started: closedChan(), cancel: release, window: newWindow(s.window)}
	s.mu.Lock()
	if _, dup := s.execs[p.AttachID]; dup {
		s.mu.Unlock()
		release()
		return nil, protocol.Errorf(protocol.KindConflict, "attach_id %q is in use", p.AttachID)
	}
	s.execs[p.AttachID] = e
	s.mu.Unlock()
	info := att.Info()
	// Chunks may overtake the answer: the resident registered the
	// attach id before it asked.
	go s.pumpAttachment(conn, p.AttachID, e, att, released, stop)
	return wire.AttachResult{Offset: info.Offset, Lost: info.Lost, Stdin: att.Stdin() != nil}, nil
}

// pumpAttachment sends the chunks under the exec window, split to fit it,
// and then the exit; after a release it sends nothing more.
func (s *Server) pumpAttachment(conn *jsonrpc2.Conn, id string, e *execution, att provider.Attachment, released context.Context, stop func() bool) {
	defer func() {
		stop()
		_ = att.Close()
		s.mu.Lock()
		delete(s.execs, id)
		s.mu.Unlock()
		e.window.close()
		e.cancel()
	}()
	for {
		c, err := att.Next()
		if released.Err() != nil {
			return
		}
		if errors.Is(err, io.EOF) {
			st, _ := att.Exit()
			_ = conn.Notify(context.Background(), wire.NotifyExecExit, wire.ExecExit{ExecID: id, Code: st.Code, Signal: st.Signal, OOMKilled: st.OOMKilled, Killed: st.Killed, TimedOut: st.TimedOut})
			return
		}
		if err != nil {
			_ = conn.Notify(context.Background(), wire.NotifyExecExit, wire.ExecExit{ExecID: id, Code: -1,
				Error: &wire.Error{Code: protocol.CodeOf(err), Message: err.Error(), Data: wire.DataOf(err)}})
			return
		}
		for data, off := c.Data, c.Offset; len(data) > 0; {
			n := e.window.take(int64(min(len(data), chunk)))
			if n == 0 {
				return // released or the session ended
			}
			_ = conn.Notify(context.Background(), wire.NotifyExecOutput, wire.ExecOutput{ExecID: id, Stream: c.Stream, Data: data[:n], Offset: off})
			data, off = data[n:], off+n
		}
	}
}

// attachedStdin lets exec/stdin reach an attachment as it reaches an exec.
type attachedStdin struct{ att provider.Attachment }

func (a attachedStdin) Stdout() io.Reader                  { return nil }
func (a attachedStdin) Stderr() io.Reader                  { return nil }
func (a attachedStdin) Stdin() io.WriteCloser              { return a.att.Stdin() }
func (a attachedStdin) Wait() (provider.ExitStatus, error) { st, _ := a.att.Exit(); return st, nil }

// Resize reaches an attached tty exec (exec/resize under the attach id).
func (a attachedStdin) Resize(size protocol.WindowSize) error {
	r, ok := a.att.(provider.Resizer)
	if !ok {
		return protocol.Errorf(protocol.KindInvalidRequest, "this exec has no terminal")
	}
	return r.Resize(size)
}
