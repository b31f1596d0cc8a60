// Package serve serves a Go provider over the external provider protocol
// (docs/provider-protocol.md), so that `resident --serve-provider NAME` is
// an external provider too, and the conformance suite can run over the
// external path with a provider whose behaviour is known.
package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/wire"
)

// maxFrame bounds the frames this side reads before initialize says more.
const maxFrame = 16 << 20

// Serve runs the protocol over r and w for prov until the resident closes
// its end or sends shutdown. The caller opened prov with a Config whose
// Notify forwards to Progress (see Server.Progress).
func Serve(ctx context.Context, r io.Reader, w io.Writer, prov provider.Provider, log *zap.Logger) error {
	s := New(prov, log)
	return s.Serve(ctx, r, w)
}

// Server is one served session.
type Server struct {
	prov provider.Provider
	log  *zap.Logger

	mu       sync.Mutex
	conn     *jsonrpc2.Conn
	execs    map[string]*execution
	reads    map[string]*window
	uploads  map[string]*upload
	requests map[string]context.CancelFunc
	conns    map[string]*wire.ConnEnd
	// closedEarly: conn/close came while its conn/open was dialling.
	closedEarly map[string]bool
	stream      *wire.Stream
	window      int64
	// connWindow is each direction's window of a connection stream.
	connWindow int64
	done       chan struct{}
	once       sync.Once
}

// New prepares a server; Serve starts it.
func New(prov provider.Provider, log *zap.Logger) *Server {
	return &Server{prov: prov, log: log, execs: map[string]*execution{}, reads: map[string]*window{}, uploads: map[string]*upload{},
		requests: map[string]context.CancelFunc{}, conns: map[string]*wire.ConnEnd{}, closedEarly: map[string]bool{}, window: 1 << 20,
		connWindow: wire.DefaultConnWindow, done: make(chan struct{})}
}

// Progress forwards a provider's notification (image pull progress) to the
// resident; pass it as provider.Config.Notify.
func (s *Server) Progress(method string, params any) {
	s.mu.Lock()
	conn := s.conn
	s.mu.Unlock()
	if conn != nil && method == protocol.NotifyPullProgress {
		_ = conn.Notify(context.Background(), wire.NotifyProgress, params)
	}
}

func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	var closer io.Closer = nopCloser{}
	if c, ok := w.(io.Closer); ok {
		closer = c
	}
	stream := wire.NewStream(r, w, closer, maxFrame)
	stream.OnData = s.connData
	s.mu.Lock()
	s.stream = stream
	s.mu.Unlock()
	conn := jsonrpc2.NewConn(ctx, stream, orderedHandler{s: s, h: jsonrpc2.HandlerWithError(s.handle)})
	s.mu.Lock()
	s.conn = conn
	s.mu.Unlock()
	s.prov.OnUnauthorized(func(reason string) {
		_ = conn.Notify(context.Background(), wire.NotifyUnauthorized, wire.Unauthorized{Reason: reason})
	})
	select {
	case <-conn.DisconnectNotify():
	case <-s.done:
		_ = conn.Close()
	case <-ctx.Done():
		_ = conn.Close()
	}
	s.killAll()
	return nil
}

// orderedHandler serves each request on its own goroutine (any may block)
// and each notification on the read loop, in the order it came: a
// connection's conn/data must reach it in order. No notification blocks.
type orderedHandler struct {
	s *Server
	h jsonrpc2.Handler
}

func (o orderedHandler) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if req.Notif {
		o.s.notification(req)
		return
	}
	go o.h.Handle(ctx, conn, req)
}

func (s *Server) killAll() {
	s.mu.Lock()
	var conns []*wire.ConnEnd
	for _, e := range s.execs {
		e.cancel()
	}
	for _, cancel := range s.requests {
		cancel()
	}
	for _, end := range s.conns {
		if end != nil {
			conns = append(conns, end)
		}
	}
	s.mu.Unlock()
	for _, end := range conns {
		end.Reset(protocol.Errorf(protocol.KindCancelled, "the session ended"))
	}
}

// handle serves one message; errors become wire errors with their kind.
func (s *Server) handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	ctx, cancel := context.WithCancel(ctx)
	key := req.ID.String()
	s.mu.Lock()
	s.requests[key] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.requests, key)
		s.mu.Unlock()
		cancel()
	}()
	res, err := s.serve(ctx, conn, req)
	if err != nil {
		d := wire.DataOf(err)
		if errors.As(err, new(errUseRelay)) {
			d = wire.ErrorData{Kind: protocol.KindInvalidRequest, UseRelay: true}
		}
		data, _ := json.Marshal(d)
		raw := json.RawMessage(data)
		return nil, &jsonrpc2.Error{Code: protocol.CodeOf(err), Message: err.Error(), Data: &raw}
	}
	return res, nil
}

func decode[T any](req *jsonrpc2.Request) (*T, error) {
	var p T
	if req.Params != nil {
		if err := json.Unmarshal(*req.Params, &p); err != nil {
			return nil, protocol.Errorf(protocol.KindInvalidRequest, "%s params: %v", req.Method, err)
		}
	}
	return &p, nil
}

func (s *Server) serve(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	switch req.Method {
	case wire.MethodInitialize:
		p, err := decode[wire.InitializeParams](req)
		if err != nil {
			return nil, err
		}
		if p.ProtocolVersion != wire.Version {
			return nil, protocol.Errorf(protocol.KindInvalidRequest, "protocol_version %d is not %d", p.ProtocolVersion, wire.Version)
		}
		s.mu.Lock()
		if p.ExecWindowBytes > 0 {
			s.window = p.ExecWindowBytes
		}
		if p.ConnWindowBytes > 0 {
			s.connWindow = p.ConnWindowBytes
		}
		s.mu.Unlock()
		return Describe(s.prov), nil
	case wire.MethodAuthApply:
		p, err := decode[wire.AuthApplyParams](req)
		if err != nil {
			return nil, err
		}
		return wire.Empty{}, s.prov.ApplyAuth(ctx, p.Credentials)
	case wire.MethodAuthSecrets:
		p, err := decode[wire.AuthSecretsParams](req)
		if err != nil {
			return nil, err
		}
		out := wire.AuthSecretsResult{Secrets: []string{}}
		if cs, ok := s.prov.(provider.CredentialSecrets); ok {
			out.Secrets = append(out.Secrets, cs.CredentialSecrets(p.Key, p.Value)...)
		}
		return out, nil
	case wire.MethodCreate:
		p, err := decode[wire.CreateParams](req)
		if err != nil {
			return nil, err
		}
		id, err := s.prov.Create(ctx, p.Spec, provider.Owner{Key: p.Owner.Key, InstallID: p.Owner.InstallID}, p.Tags)
		return wire.CreateResult{SandboxID: id}, err
	case wire.MethodListOwned:
		p, err := decode[wire.ListOwnedParams](req)
		if err != nil {
			return nil, err
		}
		list, err := s.prov.ListOwned(ctx, provider.Owner{Key: p.Owner.Key, InstallID: p.Owner.InstallID})
		out := wire.ListOwnedResult{Sandboxes: []protocol.Sandbox{}}
		for _, sb := range list {
			out.Sandboxes = append(out.Sandboxes, sb)
		}
		return out, err
	case wire.MethodReadOwner:
		p, err := decode[wire.ReadOwnerParams](req)
		if err != nil {
			return nil, err
		}
		owner, err := s.prov.ReadOwner(ctx, p.SandboxID, p.OwnerKey)
		return wire.ReadOwnerResult{Owner: owner}, err
	case wire.MethodTerminate:
		p, err := decode[wire.SandboxParams](req)
		if err != nil {
			return nil, err
		}
		existed, err := s.prov.Terminate(ctx, p.SandboxID)
		return wire.TerminateResult{Existed: existed}, err
	case wire.MethodWriteFile:
		p, err := decode[wire.WriteFileParams](req)
		if err != nil {
			return nil, err
		}
		fw, ok := s.prov.(provider.FileWriter)
		if !ok {
			return nil, protocol.Errorf(protocol.KindInvalidRequest, "this provider cannot write files")
		}
		return wire.Empty{}, fw.WriteFile(ctx, p.SandboxID, p.Path, p.Data, p.Mode)
	case wire.MethodExecStart:
		p, err := decode[wire.ExecStartParams](req)
		if err != nil {
			return nil, err
		}
		return wire.Empty{}, s.startExec(conn, p)
	case wire.MethodExecStdin:
		p, err := decode[wire.ExecStdinParams](req)
		if err != nil {
			return nil, err
		}
		return wire.Empty{}, s.writeStdin(ctx, p)
	case wire.MethodExecKill:
		p, err := decode[wire.ExecIDParams](req)
		if err != nil {
			return nil, err
		}
		if e := s.exec(p.ExecID); e != nil {
			e.cancel()
		}
		return wire.Empty{}, nil
	case wire.MethodListVolumes, wire.MethodListDir, wire.MethodReadFile:
		return s.store(ctx, conn, req)
	case wire.MethodSandboxReadFile, wire.MethodSandboxListDir, wire.MethodSandboxUpload, wire.MethodUploadData,
		wire.MethodCreateVolume, wire.MethodDeleteVolume, wire.MethodExecResize:
		return s.files(ctx, conn, req)
	case wire.MethodExecStartDetached, wire.MethodExecAttach, wire.MethodExecRelease, wire.MethodExecList, wire.MethodExecKillDetached:
		return s.detached(ctx, conn, req)
	case wire.MethodNetCommands:
		return s.netCommands()
	case wire.MethodConnOpen:
		p, err := decode[wire.ConnOpenParams](req)
		if err != nil {
			return nil, err
		}
		return wire.Empty{}, s.openConn(ctx, conn, p)
	case wire.MethodShutdown:
		s.once.Do(func() { close(s.done) })
		return wire.Empty{}, nil
	}
	return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: fmt.Sprintf("method %q is not part of the provider protocol", req.Method)}
}

func (s *Server) notification(req *jsonrpc2.Request) {
	switch req.Method {
	case wire.NotifyConnData, wire.NotifyConnCredit, wire.NotifyConnClose:
		s.connNotification(req)
	case wire.NotifyExecCredit:
		if p, err := decode[wire.ExecCredit](req); err == nil {
			if e := s.exec(p.ExecID); e != nil {
				e.window.grant(p.Bytes)
			}
		}
	case wire.NotifyStoreCredit:
		if p, err := decode[wire.StoreCredit](req); err == nil {
			s.mu.Lock()
			w := s.reads[p.StreamID]
			s.mu.Unlock()
			if w != nil {
				w.grant(p.Bytes)
			}
		}
	case wire.MethodCancel:
		if p, err := decode[wire.CancelParams](req); err == nil {
			id := jsonrpc2.ID{}
			if raw, err := json.Marshal(p.ID); err == nil && json.Unmarshal(raw, &id) == nil {
				s.mu.Lock()
				cancel := s.requests[id.String()]
				s.mu.Unlock()
				if cancel != nil {
					cancel()
				}
			}
		}
	}
}

func (s *Server) exec(id string) *execution {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.execs[id]
}

func (s *Server) writeStdin(ctx context.Context, p *wire.ExecStdinParams) error {
	e, err := s.startedExec(ctx, p.ExecID)
	if err != nil {
		return err
	}
	in := e.proc.Stdin()
	if in == nil {
		return protocol.Errorf(protocol.KindConflict, "exec %q has no stdin", p.ExecID)
	}
	if len(p.Data) > 0 {
		if _, err := in.Write(p.Data); err != nil {
			return protocol.Errorf(protocol.KindConflict, "exec %q stdin: %v", p.ExecID, err)
		}
	}
	if p.EOF {
		return in.Close()
	}
	return nil
}

// Describe is a provider's initialize result.
func Describe(prov provider.Provider) wire.InitializeResult {
	info := prov.Info()
	sec := prov.Secrets()
	out := wire.InitializeResult{
		ProtocolVersion: wire.Version, Name: info.Name, Version: info.Version, Capabilities: info.Capabilities,
		DetachedBufferBytes: info.DetachedBufferBytes,
		Secrets:             wire.Secrets{EnvPrefixes: append([]string{}, sec.EnvPrefixes...), TokenPatterns: []wire.TokenPattern{}},
	}
	// A provider that remembers owners says they never change (OwnerMemory).
	_, out.FixedOwners = prov.(provider.OwnerMemory)
	// What the provider announces but cannot be served is not announced.
	if _, ok := prov.(provider.Detacher); !ok {
		out.Capabilities.Detach, out.DetachedBufferBytes = false, 0
	}
	if _, ok := prov.(provider.SandboxFiles); !ok {
		out.Capabilities.SandboxFiles = false
	}
	if _, ok := prov.(provider.StreamWriter); !ok {
		out.Capabilities.Upload = false
	}
	if _, ok := prov.(provider.VolumeAdmin); !ok {
		out.Capabilities.VolumeAdmin = false
	}
	if r, ok := prov.(provider.Relayer); !ok {
		out.Capabilities.PortForward, out.Capabilities.Egress = false, false
	} else if _, err := NetCommands(r); err != nil {
		out.Capabilities.PortForward, out.Capabilities.Egress = false, false
	}
	out.Connections = (out.Capabilities.PortForward || out.Capabilities.Egress) && connections(prov)
	for _, t := range sec.Tokens {
		out.Secrets.TokenPatterns = append(out.Secrets.TokenPatterns, wire.TokenPattern{
			Name: t.Name, Regexp: t.Regexp.String(), Prefixes: t.Prefixes, MaxLen: t.MaxLen})
	}
	return out
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
