package serve

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/wire"
)

// connections says whether prov can open connection streams (§4.3): a
// provider.Dialer or provider.ProxyAttacher; which it cannot open here it
// answers use_relay, per connection.
func connections(prov provider.Provider) bool {
	_, d := prov.(provider.Dialer)
	_, a := prov.(provider.ProxyAttacher)
	return d || a
}

// errUseRelay answers a conn/open this provider cannot carry as a stream.
type errUseRelay struct{ msg string }

func (e errUseRelay) Error() string { return e.msg }

// openConn answers conn/open: the connection is dialled (or the proxy's
// held one joined) by the Go provider, then carried as conn/data both ways
// until both ends are done or either side resets it.
func (s *Server) openConn(ctx context.Context, conn *jsonrpc2.Conn, p *wire.ConnOpenParams) error {
	if err := p.Check(); err != nil {
		return err
	}
	s.mu.Lock()
	if _, dup := s.conns[p.ConnID]; dup {
		s.mu.Unlock()
		return protocol.Errorf(protocol.KindConflict, "conn_id %q is in use", p.ConnID)
	}
	s.conns[p.ConnID] = nil // held while dialling; messages for it are dropped
	win := s.connWindow
	s.mu.Unlock()
	up, err := s.dial(ctx, p)
	s.mu.Lock()
	closed := s.closedEarly[p.ConnID]
	delete(s.closedEarly, p.ConnID)
	if err != nil || closed {
		delete(s.conns, p.ConnID)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if closed {
		// The resident gave up on it (a cancelled conn/open) and closed
		// it before it was open: nobody will ever read it.
		_ = up.Close()
		return protocol.Errorf(protocol.KindCancelled, "connection %s was closed while it opened", p.ConnID)
	}
	var end *wire.ConnEnd
	end = wire.NewConnEnd(p.ConnID, win, sender{conn: conn, stream: s.stream}, func() {
		s.mu.Lock()
		if s.conns[p.ConnID] == end {
			delete(s.conns, p.ConnID)
		}
		s.mu.Unlock()
	})
	s.mu.Lock()
	s.conns[p.ConnID] = end
	s.mu.Unlock()
	go carryConn(end, up)
	return nil
}

func (s *Server) dial(ctx context.Context, p *wire.ConnOpenParams) (provider.Conn, error) {
	var up provider.Conn
	var err error
	if p.ProxyID != "" {
		a, ok := s.prov.(provider.ProxyAttacher)
		if !ok {
			return nil, errUseRelay{"provider " + s.prov.Info().Name + " joins the egress proxy only through its attach command"}
		}
		up, err = a.AttachProxy(ctx, p.SandboxID, p.ProxyID)
	} else {
		d, ok := s.prov.(provider.Dialer)
		if !ok {
			return nil, errUseRelay{"provider " + s.prov.Info().Name + " connects into a sandbox only through its relay command"}
		}
		up, err = d.DialSandbox(ctx, p.SandboxID, p.Port)
	}
	if errors.Is(err, provider.ErrNoDial) {
		return nil, errUseRelay{err.Error()}
	}
	return up, err
}

// connBuffer is the largest conn/data carryConn sends.
const connBuffer = wire.ConnChunk

// carryConn joins the connection stream to the provider's connection: each
// direction's end half-closes the other side; a failure reading the
// sandbox side resets the stream with its error (transient), and the
// stream's reset closes the sandbox side.
func carryConn(end *wire.ConnEnd, up provider.Conn) {
	toUp := make(chan struct{})
	go func() {
		defer close(toUp)
		// Plain readers and writers, so the copy's buffer is the chunk.
		_, err := io.CopyBuffer(struct{ io.Writer }{up}, struct{ io.Reader }{end}, make([]byte, connBuffer))
		if err != nil {
			_ = up.Close()
			return
		}
		_ = up.CloseWrite()
	}()
	_, err := io.CopyBuffer(struct{ io.Writer }{end}, struct{ io.Reader }{up}, make([]byte, connBuffer))
	if err != nil {
		end.CloseWith(protocol.Errorf(protocol.KindTransient, "the sandbox side of the connection: %v", err))
	} else {
		_ = end.CloseWrite()
	}
	<-toUp
	_ = up.Close()
}

// sender reaches the resident: notifications through the connection, data
// frames straight on the stream.
type sender struct {
	conn   *jsonrpc2.Conn
	stream *wire.Stream
}

func (s sender) Notify(method string, params any) error {
	return s.conn.Notify(context.Background(), method, params)
}

func (s sender) Data(connID string, data []byte) error { return s.stream.WriteData(connID, data) }

// connData takes a data frame on the read loop.
func (s *Server) connData(id string, data []byte) {
	s.mu.Lock()
	end := s.conns[id]
	s.mu.Unlock()
	if end != nil {
		if err := end.Deliver(wire.ConnData{ConnID: id, Data: data}); err != nil {
			s.log.Warn("the resident broke a connection stream's flow control; the connection is reset")
		}
	}
}

// connNotification takes conn/data, conn/credit and conn/close on the read
// loop (never blocking), decoding each once.
func (s *Server) connNotification(req *jsonrpc2.Request) {
	var m wire.ConnNotice
	if req.Params == nil || json.Unmarshal(*req.Params, &m) != nil {
		return
	}
	s.mu.Lock()
	end, known := s.conns[m.ConnID]
	if end == nil && known && req.Method == wire.NotifyConnClose {
		s.closedEarly[m.ConnID] = true // still dialling: openConn closes it
	}
	s.mu.Unlock()
	if end == nil {
		return
	}
	switch req.Method {
	case wire.NotifyConnData:
		if err := end.Deliver(wire.ConnData{ConnID: m.ConnID, Data: m.Data, EOF: m.EOF}); err != nil {
			s.log.Warn("the resident broke a connection stream's flow control; the connection is reset")
		}
	case wire.NotifyConnCredit:
		end.Grant(m.Bytes)
	case wire.NotifyConnClose:
		var err error = wire.ErrConnReset
		if m.Error != nil {
			err = m.Error.Data.Error(m.Error.Message)
		}
		end.Reset(err)
	}
}
