package external

import (
	"context"
	"strconv"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/wire"
)

var (
	_ provider.Dialer        = (*Provider)(nil)
	_ provider.ProxyAttacher = (*Provider)(nil)
)

// carried is one connection stream and the child that carries it.
type carried struct {
	end   *wire.ConnEnd
	child *child
}

// DialSandbox opens a connection to 127.0.0.1:port inside the sandbox as a
// connection stream of the provider protocol (conn/open, §4.3), with no
// exec. A provider that does not announce connections, or cannot open this
// one as a stream (use_relay), is provider.ErrNoDial: the resident runs the
// relay of net/commands instead.
func (p *Provider) DialSandbox(ctx context.Context, sandboxID string, port int) (provider.Conn, error) {
	return p.openConn(ctx, wire.ConnOpenParams{SandboxID: sandboxID, Port: port})
}

// AttachProxy joins the egress proxy's held connection id as a connection
// stream, as DialSandbox does a port.
func (p *Provider) AttachProxy(ctx context.Context, sandboxID, id string) (provider.Conn, error) {
	return p.openConn(ctx, wire.ConnOpenParams{SandboxID: sandboxID, ProxyID: id})
}

func (p *Provider) openConn(ctx context.Context, params wire.ConnOpenParams) (provider.Conn, error) {
	if !p.described.Connections {
		return nil, provider.ErrNoDial
	}
	c, err := p.current(ctx)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.connSeq++
	params.ConnID = "c" + strconv.FormatUint(p.connSeq, 10)
	var end *wire.ConnEnd
	end = wire.NewConnEnd(params.ConnID, p.connWin, c, func() { p.forgetConn(params.ConnID, end) })
	// Before the request: the provider's data may come before its answer.
	p.conns[params.ConnID] = carried{end: end, child: c}
	p.mu.Unlock()
	if err := p.callOn(ctx, c, wire.MethodConnOpen, params, nil); err != nil {
		if ctx.Err() != nil {
			// The provider may have opened it after all: it hears of
			// the close (an unknown id is nothing to it).
			_ = end.Close()
		} else {
			end.Reset(err)
		}
		return nil, err
	}
	return end, nil
}

func (p *Provider) forgetConn(id string, end *wire.ConnEnd) {
	p.mu.Lock()
	if cs, ok := p.conns[id]; ok && cs.end == end {
		delete(p.conns, id)
	}
	p.mu.Unlock()
}

// connData takes a data frame on the read loop.
func (p *Provider) connData(id string, data []byte) {
	p.mu.Lock()
	cs, ok := p.conns[id]
	p.mu.Unlock()
	if ok {
		if err := cs.end.Deliver(wire.ConnData{ConnID: id, Data: data}); err != nil {
			p.logger().Warn("provider broke a connection stream's flow control; the connection is reset", errorField(err))
		}
	}
}

// connNotification takes a connection stream's message on the read loop;
// none blocks. One decode for all three (a chunk's base64 is decoded once).
func (p *Provider) connNotification(req *jsonrpc2.Request) {
	var m wire.ConnNotice
	if decodeNotif(req, &m) != nil {
		return
	}
	p.mu.Lock()
	cs, ok := p.conns[m.ConnID]
	p.mu.Unlock()
	if !ok {
		return // one that ended here: what was in flight is dropped
	}
	switch req.Method {
	case wire.NotifyConnData:
		if err := cs.end.Deliver(wire.ConnData{ConnID: m.ConnID, Data: m.Data, EOF: m.EOF}); err != nil {
			p.logger().Warn("provider broke a connection stream's flow control; the connection is reset", errorField(err))
		}
	case wire.NotifyConnCredit:
		cs.end.Grant(m.Bytes)
	case wire.NotifyConnClose:
		err := fromWireError(m.Error)
		if err == nil {
			err = protocol.Errorf(protocol.KindTransient, "provider %s reset the connection", p.name)
		}
		cs.end.Reset(err)
	}
}
