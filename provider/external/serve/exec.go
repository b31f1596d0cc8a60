package serve

import (
	"context"
	"io"
	"sync"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/wire"
)

// chunk is the most output one exec/output carries.
const chunk = 64 << 10

// pumpBuffers are the streams' read buffers, reused: most execs print
// little or nothing, and two fresh zeroed 64 KiB buffers per exec were the
// served side's largest allocation, and a collection every few dozen execs.
var pumpBuffers = sync.Pool{New: func() any { return new([chunk]byte) }}

// window counts the output bytes a stream may still send before the
// resident grants more (docs/provider-protocol.md §4).
type window struct {
	mu     sync.Mutex
	cond   *sync.Cond
	left   int64
	closed bool
}

func newWindow(n int64) *window {
	w := &window{left: n}
	w.cond = sync.NewCond(&w.mu)
	return w
}

func (w *window) grant(n int64) {
	w.mu.Lock()
	w.left += n
	w.mu.Unlock()
	w.cond.Broadcast()
}

// take waits until at least one byte may be sent and returns how many of
// want, or 0 once closed.
func (w *window) take(want int64) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.left <= 0 && !w.closed {
		w.cond.Wait()
	}
	if w.closed {
		return 0
	}
	n := min(want, w.left)
	w.left -= n
	return n
}

func (w *window) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.cond.Broadcast()
}

type execution struct {
	proc    provider.Process // set before started closes; nil after a failed start
	started chan struct{}    // closed once the start has its answer
	cancel  context.CancelFunc
	window  *window
}

// closedChan is a started that has its answer already.
func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// startedExec is the exec id once its start has an answer: an exec/stdin
// or exec/resize may be handled (the handler is asynchronous) before the
// exec/start it follows has returned.
func (s *Server) startedExec(ctx context.Context, id string) (*execution, error) {
	e := s.exec(id)
	if e == nil {
		return nil, protocol.Errorf(protocol.KindNotFound, "exec %q not found", id)
	}
	select {
	case <-e.started:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if e.proc == nil {
		return nil, protocol.Errorf(protocol.KindNotFound, "exec %q did not start", id)
	}
	return e, nil
}

func (s *Server) startExec(conn *jsonrpc2.Conn, p *wire.ExecStartParams) error {
	if p.ExecID == "" {
		return protocol.Errorf(protocol.KindInvalidRequest, "exec_id is required")
	}
	// The exec outlives the start request: its context ends with exec/kill
	// or the session, never with the request's answer.
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	if _, dup := s.execs[p.ExecID]; dup {
		s.mu.Unlock()
		cancel()
		return protocol.Errorf(protocol.KindConflict, "exec_id %q is in use", p.ExecID)
	}
	win := newWindow(s.window)
	e := &execution{cancel: cancel, window: win, started: make(chan struct{})}
	s.execs[p.ExecID] = e
	s.mu.Unlock()
	proc, err := s.prov.Exec(ctx, p.SandboxID, provider.ExecRequest{Argv: p.Argv, Env: p.Env, Cwd: p.Cwd, Stdin: p.Stdin, Exclusive: p.Exclusive,
		User: p.User, TTY: p.TTY})
	if err != nil {
		s.mu.Lock()
		delete(s.execs, p.ExecID)
		s.mu.Unlock()
		cancel()
		close(e.started)
		return err
	}
	e.proc = proc
	close(e.started)
	go s.runExec(conn, p.ExecID, e)
	return nil
}

// runExec pumps both streams under one window, then sends the one exit.
func (s *Server) runExec(conn *jsonrpc2.Conn, id string, e *execution) {
	var wg sync.WaitGroup
	var sendMu sync.Mutex // output notifications of one exec in order per stream
	pump := func(stream string, r io.Reader) {
		defer wg.Done()
		held := pumpBuffers.Get().(*[chunk]byte)
		defer pumpBuffers.Put(held) // Notify has encoded what it sent before it returns
		buf := held[:]
		for {
			want := e.window.take(chunk)
			if want == 0 {
				_, _ = io.Copy(io.Discard, r) // the exec ends; keep the process from blocking
				return
			}
			n, err := r.Read(buf[:want])
			if n > 0 {
				sendMu.Lock()
				_ = conn.Notify(context.Background(), wire.NotifyExecOutput, wire.ExecOutput{ExecID: id, Stream: stream, Data: buf[:n]})
				sendMu.Unlock()
			}
			if int64(n) < want {
				e.window.grant(want - int64(n))
			}
			if err != nil {
				return
			}
		}
	}
	wg.Add(2)
	go pump(protocol.StreamStdout, e.proc.Stdout())
	go pump(protocol.StreamStderr, e.proc.Stderr())
	status, err := e.proc.Wait()
	wg.Wait()
	exit := wire.ExecExit{ExecID: id, Code: status.Code, Signal: status.Signal, OOMKilled: status.OOMKilled, Killed: status.Killed}
	if err != nil {
		exit.Error = &wire.Error{Code: protocol.CodeOf(err), Message: err.Error(), Data: wire.DataOf(err)}
	}
	_ = conn.Notify(context.Background(), wire.NotifyExecExit, exit)
	s.mu.Lock()
	delete(s.execs, id)
	s.mu.Unlock()
	e.window.close()
	e.cancel()
}

func (s *Server) store(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	st, ok := s.prov.(provider.Store)
	if !ok {
		return nil, protocol.Errorf(protocol.KindInvalidRequest, "this provider has no store")
	}
	switch req.Method {
	case wire.MethodListVolumes:
		p, err := decode[wire.ListVolumesParams](req)
		if err != nil {
			return nil, err
		}
		vols, err := st.ListVolumes(ctx, provider.Owner(p.Owner))
		if vols == nil {
			vols = []protocol.Volume{}
		}
		return wire.ListVolumesResult{Volumes: vols}, err
	case wire.MethodListDir:
		p, err := decode[wire.ListDirParams](req)
		if err != nil {
			return nil, err
		}
		entries, truncated, err := st.ListDir(ctx, provider.Owner(p.Owner), p.Root, p.Path, p.Limit)
		if entries == nil {
			entries = []protocol.DirEntry{}
		}
		return wire.ListDirResult{Entries: entries, Truncated: truncated}, err
	}
	p, err := decode[wire.ReadFileParams](req)
	if err != nil {
		return nil, err
	}
	rc, err := st.ReadFile(ctx, provider.Owner(p.Owner), p.Root, p.Path)
	if err != nil {
		return nil, err
	}
	return s.sendStream(ctx, conn, p.StreamID, rc)
}

// sendStream sends rc as store/data under streamID, within the credit the
// resident grants, and answers {} at its end.
func (s *Server) sendStream(ctx context.Context, conn *jsonrpc2.Conn, streamID string, rc io.ReadCloser) (any, error) {
	defer rc.Close()
	s.mu.Lock()
	win := newWindow(s.window)
	s.reads[streamID] = win
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.reads, streamID)
		s.mu.Unlock()
	}()
	stop := context.AfterFunc(ctx, win.close)
	defer stop()
	buf := make([]byte, chunk)
	for {
		want := win.take(chunk)
		if want == 0 {
			return nil, ctx.Err()
		}
		n, err := rc.Read(buf[:want])
		if n > 0 {
			if nerr := conn.Notify(ctx, wire.NotifyStoreData, wire.StoreData{StreamID: streamID, Data: buf[:n]}); nerr != nil {
				return nil, nerr
			}
		}
		if int64(n) < want {
			win.grant(want - int64(n))
		}
		if err == io.EOF {
			return wire.Empty{}, nil
		}
		if err != nil {
			return nil, protocol.Wrap(protocol.KindTransient, err)
		}
	}
}
