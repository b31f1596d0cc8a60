package resident

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
)

// call is one request being served. It holds the decoded params only: the
// frame they came in is dropped on the read loop.
type call struct {
	id     jsonrpc2.ID
	key    string // id as a map key
	method string
	// params are the handler's typed params; nil when decodeErr is set or
	// the request was refused.
	params    any
	decodeErr error
	// refused is the answer of a request turned away on the read loop
	// (the budget had no room for what it would keep); it runs no handler.
	refused error
	// hold is this request's share of the host budget: settled when its
	// handler returns, released once its answer is written.
	hold *hold
	// ordered, when set, is closed by the previous request with the same
	// ordering key; this request runs only after it.
	after    <-chan struct{}
	done     chan struct{}
	orderKey string
	// route holds the ids some methods are ordered or pre-registered by.
	route route
	// exec is the entry a sandbox/exec registered (nil: its id was in use);
	// target is the exec an exec/stdin or exec/kill named, found when it
	// was read (nil: none running).
	exec, target *runningExec
	// upload is the streamed write_file a sandbox/write_file registered,
	// or the one an upload/data named (nil: none).
	upload *upload
	// afterReply runs once the response is written (shutdown uses it).
	afterReply func()
}

type route struct {
	SandboxID string `json:"sandbox_id"`
	ExecID    string `json:"exec_id"`
	StreamID  string `json:"stream_id"`
}

// routeOf reads the ids a request is routed by from its decoded params, or
// from the raw ones when they did not decode (the handler then fails, but
// the request still takes its place in its queue). Decoding the raw params
// a second time would be one more pass over every byte of a data frame.
func routeOf(params any, raw []byte) route {
	switch p := params.(type) {
	case *protocol.UploadDataParams:
		return route{StreamID: p.StreamID}
	case *protocol.ExecStdinParams:
		return route{ExecID: p.ExecID}
	case *protocol.WriteFileParams:
		return route{SandboxID: p.SandboxID, StreamID: p.StreamID}
	case *protocol.ExecParams:
		return route{SandboxID: p.SandboxID, ExecID: p.ExecID}
	case *protocol.ImageBuildParams:
		return route{StreamID: p.ContextStreamID}
	}
	var r route
	_ = json.Unmarshal(raw, &r) // a malformed one fails in its handler
	return r
}

// Handle is called on the connection's read loop, in arrival order. It does
// only what must happen in that order (decoding, the budget, cancellation,
// ordering tickets, exec pre-registration) and runs the request itself on
// its own goroutine.
func (s *session) Handle(_ context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	in := s.stream.take()
	if req.Notif {
		in.hold.release()
		s.handleNotification(req.Method, in.params)
		return
	}
	c := &call{id: req.ID, key: req.ID.String(), method: req.Method, done: make(chan struct{}), hold: in.hold}
	m, known := methods[req.Method]
	if known {
		c.params, c.decodeErr = m.decode(in.params, in.data)
		if m.routed {
			c.route = routeOf(c.params, in.params)
		}
	}
	ctx, cancel := context.WithCancelCause(s.base)
	s.mu.Lock()
	if _, dup := s.inflight[c.key]; dup {
		s.mu.Unlock()
		cancel(nil)
		c.hold.release()
		s.reply(conn, c, nil, protocol.Errorf(protocol.KindInvalidRequest, "request id %s is already in flight", c.key))
		return
	}
	s.inflight[c.key] = cancel
	switch req.Method {
	case protocol.MethodSandboxExec, protocol.MethodExecAttach:
		s.preRegisterExec(c)
	case protocol.MethodExecStdin, protocol.MethodExecKill, protocol.MethodExecResize:
		c.target = s.execs[c.route.ExecID]
	case protocol.MethodSandboxWrite, protocol.MethodImageBuild:
		s.preRegisterUpload(c)
	case protocol.MethodUploadData:
		c.upload = s.uploads[c.route.StreamID]
	}
	s.keepOrRefuse(c, m, known)
	// A request refused or not decoded applies nothing, so it answers at
	// once instead of queueing (and waiting) behind the others.
	if known && c.refused == nil && c.decodeErr == nil && m.orderKey != nil {
		if c.orderKey = m.orderKey(c.route); c.orderKey != "" {
			c.after = s.queues[c.orderKey]
			s.queues[c.orderKey] = c.done
		}
	}
	s.mu.Unlock()

	s.handlers.Add(1)
	go func() {
		defer s.handlers.Done()
		defer cancel(nil)
		result, err := s.run(ctx, c, m, known)
		if p, ok := c.params.(*protocol.UploadDataParams); ok {
			dataBuffers.put(p.Data) // taken by the upload's reader, which keeps none of it
		}
		c.params = nil
		c.hold.settle()
		defer c.hold.release() // once the answer is written
		if c.method == protocol.MethodSandboxExec || c.method == protocol.MethodExecAttach {
			s.releaseExecID(c)
		}
		s.releaseUpload(c)
		s.mu.Lock()
		delete(s.inflight, c.key)
		close(c.done)
		if c.orderKey != "" && s.queues[c.orderKey] == c.done {
			delete(s.queues, c.orderKey) // nothing queued behind it
		}
		s.mu.Unlock()
		s.reply(conn, c, result, err)
	}()
}

func (s *session) handleNotification(method string, params []byte) {
	if method != protocol.MethodCancelRequest {
		s.log.Debug("notification ignored", zap.String("method", method))
		return
	}
	var p struct {
		ID json.RawMessage `json:"id"`
	}
	if params == nil || json.Unmarshal(params, &p) != nil {
		s.log.Info("malformed $/cancelRequest ignored")
		return
	}
	var key string
	var str string
	var num uint64
	switch {
	case json.Unmarshal(p.ID, &str) == nil:
		key = jsonrpc2.ID{Str: str, IsString: true}.String()
	case json.Unmarshal(p.ID, &num) == nil: // refuses 10.5, -1
		key = jsonrpc2.ID{Num: num}.String()
	default:
		s.log.Info("$/cancelRequest with an id that no request can have ignored")
		return
	}
	s.mu.Lock()
	cancel := s.inflight[key]
	s.mu.Unlock()
	if cancel != nil {
		cancel(errHostCancel)
	}
}

// run serves one request, turning a panic into an internal error for it
// alone.
func (s *session) run(ctx context.Context, c *call, m method, known bool) (result any, err error) {
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("request panicked", zap.String("method", c.method), zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
			result, err = nil, protocol.Errorf(protocol.KindInternal, "internal error in %s: %v", c.method, p)
		}
		s.log.Debug("request served", zap.String("method", c.method), zap.String("id", c.key),
			zap.Duration("took", time.Since(start)), zap.String("kind", kindOrEmpty(err)), zap.Error(err))
	}()
	if c.after != nil {
		select {
		case <-c.after:
		case <-ctx.Done():
			return nil, s.contextError(ctx, ctx.Err())
		}
	}
	if !known {
		return nil, &protocol.Error{Kind: protocol.KindInvalidRequest, Code: protocol.CodeMethodNotFound, Msg: fmt.Sprintf("method not found: %q", c.method)}
	}
	if err := s.admit(c.method); err != nil {
		return nil, err
	}
	if c.decodeErr != nil {
		return nil, c.decodeErr
	}
	if c.refused != nil {
		return nil, c.refused
	}
	result, err = m.serve(ctx, s, c)
	if errors.Is(context.Cause(ctx), errHostCancel) && err == nil {
		// The contract: a cancelled request answers cancelled, even when
		// its work finished in the race with the cancel.
		err = context.Canceled
	}
	if err != nil {
		err = s.contextError(ctx, err)
	}
	return result, err
}

// admit applies the lifecycle: initialize first and once, nothing after
// expiry.
func (s *session) admit(method string) error {
	if s.expired() {
		return protocol.Errorf(protocol.KindUnauthorized, "credentials expired; respawn the resident with fresh credentials")
	}
	state := lifecycle(s.state.Load())
	switch {
	case method == protocol.MethodInitialize && state != stateNew:
		return &protocol.Error{Kind: protocol.KindInvalidRequest, Code: protocol.CodeInvalidRequest, Msg: "initialize was already called"}
	case method != protocol.MethodInitialize && state != stateReady:
		return &protocol.Error{Kind: protocol.KindInvalidRequest, Code: protocol.CodeInvalidRequest, Msg: "initialize must be the first request"}
	}
	return nil
}

// contextError gives an error from a cancelled request the kind its cause
// calls for.
func (s *session) contextError(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		return err
	}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errExpired):
		return protocol.Errorf(protocol.KindUnauthorized, "credentials expired; respawn the resident with fresh credentials")
	case errors.Is(cause, errHostCancel):
		return protocol.Errorf(protocol.KindCancelled, "request cancelled by the host")
	case errors.Is(cause, errShuttingDown):
		return protocol.Errorf(protocol.KindCancelled, "request cancelled: the resident is shutting down")
	}
	return err
}

func (s *session) reply(conn *jsonrpc2.Conn, c *call, result any, err error) {
	var werr error
	if err != nil {
		werr = conn.ReplyWithError(context.Background(), c.id, wireErrorOf(err))
	} else {
		werr = conn.Reply(context.Background(), c.id, result)
	}
	if errors.Is(werr, jsonrpc2.ErrClosed) {
		// The connection stops sending once reading ends (stdin EOF), but a
		// host that only closed its writing end still reads: every request
		// gets its one response.
		werr = s.stream.WriteObject(directResponse(c.id, result, err))
	}
	if werr != nil {
		s.log.Debug("response not delivered", zap.String("method", c.method), zap.Error(werr))
	}
	if c.afterReply != nil {
		c.afterReply()
	}
}

// wireErrorOf is the one place an error becomes a JSON-RPC error: the kind
// found anywhere in the chain is kept; anything unclassified is transient.
func wireErrorOf(err error) *jsonrpc2.Error {
	e := &jsonrpc2.Error{Code: protocol.CodeOf(err), Message: err.Error()}
	e.SetError(protocol.DataOf(err))
	return e
}

func kindOrEmpty(err error) string {
	if err == nil {
		return ""
	}
	return string(protocol.KindOf(err))
}

func directResponse(id jsonrpc2.ID, result any, err error) *jsonrpc2.Response {
	resp := &jsonrpc2.Response{ID: id}
	if err != nil {
		resp.Error = wireErrorOf(err)
		return resp
	}
	if setErr := resp.SetResult(result); setErr != nil {
		resp.Error = wireErrorOf(protocol.Errorf(protocol.KindInternal, "encoding the result: %v", setErr))
	}
	return resp
}
