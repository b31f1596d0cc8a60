package channel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// NetError is a connection stream the keeper could not open (Op "dial")
// or reset (Op "reset"). Reason is one of the Net* reasons.
type NetError struct {
	Op     string
	Reason string
	Msg    string
}

func (e *NetError) Error() string { return "keeper channel: " + e.Op + ": " + e.Reason + ": " + e.Msg }

// The reasons of a NetError.
const (
	NetRefused     = keeperproto.NetRefused
	NetUnreachable = keeperproto.NetUnreachable
	NetReset       = keeperproto.NetResetByPeer
	NetOther       = keeperproto.NetError
)

// NetWindow is a connection stream's output credit (at least the Conn's
// window). A connection's bytes cross the channel's transport both ways
// for every credit given back, and over Docker's attach stream that round
// trip is milliseconds: 128 KiB a round trip held a forwarded download to
// a fraction of the transport's rate. The resident's copy to the host's
// socket drains it as it comes, so it is held only while the host's
// reader is slower than the sandbox.
var NetWindow = 512 << 10

// ErrNetClosed is a NetConn used after Close (or after CloseWrite, for a
// Write).
var ErrNetClosed = net.ErrClosed

// NetConn is one connection stream: a socket inside the sandbox that the
// keeper carries, its bytes both ways over the channel within each side's
// credit, so a reader that stops holds back its own connection only. Read
// and Write may run at once (one of each); CloseWrite half-closes the
// sandbox side's input, and Read's io.EOF is the sandbox side's
// half-close. Close resets what is left.
type NetConn struct {
	st *cstream
	w  stdinWriter

	mu        sync.Mutex
	readEnded bool // the keeper's End came
	wrote     bool // CloseWrite sent
	closed    bool
}

// Dial connects to 127.0.0.1:port inside the sandbox, through the keeper
// (FeatureNet; ErrUnsupported without). A port nothing listens on is a
// *NetError with Reason NetRefused.
func (c *Conn) Dial(ctx context.Context, port int) (*NetConn, error) {
	return c.dial(ctx, keeperproto.Dial{Port: port})
}

// DialProxy joins the egress proxy's held connection id (keeperproto.CmdProxy)
// as the keeper's attach does: the sandbox's client on the other end.
func (c *Conn) DialProxy(ctx context.Context, id string) (*NetConn, error) {
	return c.dial(ctx, keeperproto.Dial{ProxyID: id})
}

func (c *Conn) dial(ctx context.Context, req keeperproto.Dial) (*NetConn, error) {
	if !c.Supports(keeperproto.FeatureNet) {
		return nil, ErrUnsupported
	}
	st, err := c.newStream(false)
	if err != nil {
		return nil, err
	}
	st.setWindow(max(c.window, NetWindow))
	req.Window = st.base
	nc := &NetConn{st: st, w: stdinWriter{st: st}}
	st.onEnd = nc.ended // before the request: the read loop may see End right after Result
	if err := c.sendJSON(keeperproto.ChanDial, st.id, req); err != nil {
		c.forget(st)
		return nil, err
	}
	f, err := st.answer(ctx, true)
	if err != nil {
		return nil, err
	}
	switch f.Type {
	case keeperproto.ChanResult:
		return nc, nil
	case keeperproto.ChanFailure:
		var fail keeperproto.Failure
		_ = json.Unmarshal(f.Payload, &fail)
		if fail.Kind == keeperproto.KindInvalidRequest {
			return nil, fmt.Errorf("keeper channel: dial: %s", fail.Msg)
		}
		return nil, &NetError{Op: "dial", Reason: fail.Reason, Msg: fail.Msg}
	}
	nc.abort()
	return nil, fmt.Errorf("%w: unexpected answer %q to dial", ErrBroken, f.Type)
}

// ended takes the keeper's End (from the read loop): empty, the sandbox
// side's half-close; with a NetReset, the connection's reset.
func (nc *NetConn) ended(payload []byte) {
	if len(payload) > 0 {
		var r keeperproto.NetReset
		_ = json.Unmarshal(payload, &r)
		// Writes stop before a Read can see the reset (finish ends the
		// output first).
		nc.st.input.close()
		nc.st.finish(nil, &NetError{Op: "reset", Reason: r.Reason, Msg: r.Msg})
		return
	}
	nc.st.stdout.close(io.EOF)
	nc.mu.Lock()
	nc.readEnded = true
	done := nc.wrote
	nc.mu.Unlock()
	if done {
		nc.st.finish(nil, nil)
	}
}

// Read reads what the sandbox side sent; io.EOF after its half-close, a
// *NetError after a reset, ErrBroken when the channel broke.
func (nc *NetConn) Read(p []byte) (int, error) { return nc.st.stdout.Read(p) }

// Write sends p to the sandbox side, waiting for the keeper's credit.
func (nc *NetConn) Write(p []byte) (int, error) {
	n, err := nc.w.Write(p)
	if errors.Is(err, io.ErrClosedPipe) {
		if e := nc.st.err(); e != nil {
			return n, e
		}
		return n, ErrNetClosed
	}
	return n, err
}

// ReadFrom makes io.Copy into the connection send whole frames.
func (nc *NetConn) ReadFrom(r io.Reader) (int64, error) {
	buf := make([]byte, keeperproto.MaxPayload)
	var total int64
	for {
		n, err := r.Read(buf)
		if n > 0 {
			w, werr := nc.Write(buf[:n])
			total += int64(w)
			if werr != nil {
				return total, werr
			}
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// CloseWrite half-closes: the sandbox side reads EOF after what was
// written; its answer still comes back.
func (nc *NetConn) CloseWrite() error {
	nc.mu.Lock()
	if nc.wrote || nc.closed {
		nc.mu.Unlock()
		return nil
	}
	nc.wrote = true
	done := nc.readEnded
	nc.mu.Unlock()
	err := nc.w.Close()
	if done {
		nc.st.finish(nil, nil)
	}
	return err
}

// Close ends the connection: a reset, unless both ways had ended already.
// A blocked Read or Write returns.
func (nc *NetConn) Close() error {
	nc.mu.Lock()
	if nc.closed {
		nc.mu.Unlock()
		return nil
	}
	nc.closed = true
	nc.mu.Unlock()
	nc.abort()
	return nil
}

// abort gives the stream up: the keeper resets the socket.
func (nc *NetConn) abort() {
	select {
	case <-nc.st.exited:
	default:
		_ = nc.st.c.send(keeperproto.ChanRelease, nc.st.id, nil)
	}
	nc.st.broken(ErrNetClosed)
	nc.st.c.forget(nc.st)
}
