package main

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// dialTimeout bounds a connection stream's dial inside the sandbox (a
// loopback port or the proxy's socket: either answers at once or never).
const dialTimeout = 10 * time.Second

// dialStream is one connection stream (keeperproto.Dial): a socket inside
// the sandbox the keeper itself carries, no exec, no process. Its socket's
// reads go out as ChanStdout within the client's credit (out); the
// client's ChanStdin queue up for the writer, which gives each frame's
// credit back once it is written, so the queue never holds more than the
// window the keeper announced. Either way ends on its own (a half-close);
// the stream is done when both have, or on a reset.
type dialStream struct {
	l   link
	out *credit

	mu      sync.Mutex
	cond    *sync.Cond
	conn    halfCloser // nil until connected
	closer  io.Closer
	queue   [][]byte
	eof     bool // the client half-closed: after the queue, CloseWrite
	ended   bool // reset, released or the holder went: nothing more either way
	readEnd bool // the socket's side ended (End sent)
	wrote   bool // the client's side ended (CloseWrite done)
}

// dial opens a connection stream (under s.mu, from open); the dial and the
// carrying run on their own goroutines.
func (s *server) dial(l link, req keeperproto.Dial) stream {
	if (req.Port <= 0) == (req.ProxyID == "") || req.Port > 65535 {
		go l.fail(keeperproto.KindInvalidRequest, "", "dial: give a port 1..65535 or a proxy_id, not both")
		return nil
	}
	window := req.Window
	if window <= 0 || window > 16<<20 {
		window = 256 << 10
	}
	st := &dialStream{l: l, out: newCredit(window)}
	st.cond = sync.NewCond(&st.mu)
	go st.run(req)
	return st
}

func (st *dialStream) run(req keeperproto.Dial) {
	conn, closer, err := dialTarget(req)
	if err != nil {
		_ = st.l.sendJSON(keeperproto.ChanFailure, keeperproto.Failure{Kind: keeperproto.KindTransient, Reason: netReason(err), Msg: "dial: " + err.Error()})
		st.l.s.closeStream(st.l, st)
		return
	}
	st.mu.Lock()
	if st.ended {
		st.mu.Unlock()
		_ = closer.Close()
		st.l.s.closeStream(st.l, st)
		return
	}
	st.conn, st.closer = conn, closer
	st.mu.Unlock()
	// Result before any byte: the client's Dial returns on it, and the
	// socket's first bytes follow it on the wire.
	_ = st.l.sendJSON(keeperproto.ChanResult, keeperproto.Result{})
	go st.write()
	st.read()
}

// dialTarget connects to the loopback port, or joins the proxy's held
// connection as attach does: the id line first, then the connection.
func dialTarget(req keeperproto.Dial) (halfCloser, io.Closer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	var d net.Dialer
	if req.ProxyID != "" {
		c, err := d.DialContext(ctx, "unix", keeperproto.ProxySocket)
		if err != nil {
			return nil, nil, err
		}
		if _, err := io.WriteString(c, req.ProxyID+"\n"); err != nil {
			_ = c.Close()
			return nil, nil, err
		}
		uc := c.(*net.UnixConn)
		return uc, uc, nil
	}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(req.Port)))
	if err != nil {
		return nil, nil, err
	}
	tc := c.(*net.TCPConn)
	return tc, tc, nil
}

// read sends the socket's bytes within the client's credit, then its end:
// an empty End at EOF (the sandbox side's half-close), a reset on an error.
func (st *dialStream) read() {
	buf := make([]byte, keeperproto.MaxPayload)
	for {
		n := st.out.take(len(buf))
		if n == 0 {
			return // ended
		}
		got, err := st.conn.Read(buf[:n])
		st.out.giveBack(n - got)
		if got > 0 {
			if st.l.send(keeperproto.ChanStdout, buf[:got]) != nil {
				st.reset("", nil)
				return
			}
		}
		if errors.Is(err, io.EOF) {
			st.mu.Lock()
			if st.ended {
				st.mu.Unlock()
				return
			}
			st.readEnd = true
			done := st.wrote
			st.mu.Unlock()
			_ = st.l.send(keeperproto.ChanEnd, nil)
			if done {
				st.finish()
			}
			return
		}
		if err != nil {
			st.reset(netReason(err), err)
			return
		}
	}
}

// write writes the client's bytes in order, each frame's credit given
// back once written; the client's EOF half-closes the socket after them.
func (st *dialStream) write() {
	for {
		st.mu.Lock()
		for len(st.queue) == 0 && !st.eof && !st.ended {
			st.cond.Wait()
		}
		if st.ended {
			st.mu.Unlock()
			return
		}
		if len(st.queue) == 0 { // eof, all written
			st.mu.Unlock()
			err := st.conn.CloseWrite()
			st.mu.Lock()
			st.wrote = true
			done := st.readEnd
			st.mu.Unlock()
			if err != nil && !errors.Is(err, net.ErrClosed) {
				st.reset(netReason(err), err)
				return
			}
			if done {
				st.finish()
			}
			return
		}
		data := st.queue[0]
		st.queue[0] = nil
		st.queue = st.queue[1:]
		st.mu.Unlock()
		_, err := st.conn.Write(data)
		_ = st.l.send(keeperproto.ChanCredit, creditPayload(len(data)))
		if err != nil {
			st.reset(netReason(err), err)
			return
		}
	}
}

func (st *dialStream) input(f keeperproto.Frame) {
	switch f.Type {
	case keeperproto.ChanCredit:
		st.out.grant(creditFrom(f.Payload))
	case keeperproto.ChanStdin:
		st.mu.Lock()
		if st.ended || st.eof {
			st.mu.Unlock()
			return
		}
		st.queue = append(st.queue, f.Payload)
		st.mu.Unlock()
		st.cond.Signal()
	case keeperproto.ChanStdinEOF:
		st.mu.Lock()
		st.eof = true
		st.mu.Unlock()
		st.cond.Signal()
	case keeperproto.ChanRelease, keeperproto.ChanKill:
		st.reset("", nil) // the client gave the connection up: it was told nothing
	}
}

// end: the holder went. The connection goes with it.
func (st *dialStream) end() { st.stop() }

// stop ends both ways at once and closes the socket; false if it had ended.
func (st *dialStream) stop() bool {
	st.mu.Lock()
	if st.ended {
		st.mu.Unlock()
		return false
	}
	st.ended = true
	st.queue = nil
	closer := st.closer
	st.mu.Unlock()
	st.cond.Broadcast()
	st.out.close()
	if closer != nil {
		if tc, ok := closer.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, not a clean end, for the sandbox's side
		}
		_ = closer.Close()
	}
	return true
}

// reset ends the stream on an error: the client is told why (unless it
// gave the stream up itself, reason ""), then forgotten.
func (st *dialStream) reset(reason string, err error) {
	if !st.stop() {
		return
	}
	if reason != "" {
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		_ = st.l.sendJSON(keeperproto.ChanEnd, keeperproto.NetReset{Reason: reason, Msg: msg})
	}
	st.l.s.closeStream(st.l, st)
}

// finish: both ways ended cleanly.
func (st *dialStream) finish() {
	st.mu.Lock()
	if st.ended {
		st.mu.Unlock()
		return
	}
	st.ended = true
	closer := st.closer
	st.mu.Unlock()
	st.cond.Broadcast()
	st.out.close()
	_ = closer.Close()
	st.l.s.closeStream(st.l, st)
}

// netReason names a socket error's reason (keeperproto.Net*).
func netReason(err error) string {
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno) && errno == syscall.ECONNREFUSED:
		return keeperproto.NetRefused
	case errors.As(err, &errno) && (errno == syscall.ECONNRESET || errno == syscall.EPIPE):
		return keeperproto.NetResetByPeer
	case errors.As(err, &errno) && (errno == syscall.ENETUNREACH || errno == syscall.EHOSTUNREACH || errno == syscall.ENOENT):
		return keeperproto.NetUnreachable
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return keeperproto.NetUnreachable
	}
	return keeperproto.NetError
}
