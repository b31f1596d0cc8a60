package wire

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/resident-dev/resident/protocol"
)

// Connection streams (§4.3 of the page): a provider that announces
// InitializeResult.Connections opens a connection inside a sandbox on
// conn/open and carries its bytes as conn/data notifications both ways,
// each direction under its own credit, so the resident needs no relay exec
// (a process in the sandbox) per forwarded or egress connection.
const (
	MethodConnOpen = "conn/open"
	NotifyConnData = "conn/data"
	// NotifyConnCredit grants the other side more of one direction's
	// window, as exec/credit does an exec's output.
	NotifyConnCredit = "conn/credit"
	// NotifyConnClose resets a connection, either way: nothing more flows
	// under its id.
	NotifyConnClose = "conn/close"
)

// DefaultConnWindow is a connection direction's window when initialize
// names none.
const DefaultConnWindow = 1 << 20

// ConnChunk is the most one conn/data carries.
const ConnChunk = 64 << 10

// ConnOpenParams ask for a connection to 127.0.0.1:Port inside the sandbox
// or, with ProxyID, the join of the egress proxy's held connection (what
// AttachCommand does): exactly one of the two.
type ConnOpenParams struct {
	ConnID    string `json:"conn_id"`
	SandboxID string `json:"sandbox_id"`
	Port      int    `json:"port,omitempty"`
	ProxyID   string `json:"proxy_id,omitempty"`
}

// Check says what is wrong with a conn/open's params.
func (p ConnOpenParams) Check() error {
	switch {
	case p.ConnID == "":
		return protocol.Errorf(protocol.KindInvalidRequest, "conn/open: conn_id is required")
	case p.SandboxID == "":
		return protocol.Errorf(protocol.KindInvalidRequest, "conn/open: sandbox_id is required")
	case (p.Port == 0) == (p.ProxyID == ""):
		return protocol.Errorf(protocol.KindInvalidRequest, "conn/open: exactly one of port and proxy_id is required")
	case p.ProxyID == "" && (p.Port < 1 || p.Port > 65535):
		return protocol.Errorf(protocol.KindInvalidRequest, "conn/open: port %d is out of range", p.Port)
	}
	return nil
}

// ConnData is the next bytes of one direction, or (EOF) its end: a
// half-close, after which that side sends no more data.
type ConnData struct {
	ConnID string `json:"conn_id"`
	Data   []byte `json:"data,omitempty"`
	EOF    bool   `json:"eof,omitempty"`
}

type ConnCredit struct {
	ConnID string `json:"conn_id"`
	Bytes  int64  `json:"bytes"`
}

// ConnClose resets a connection; Error, when set, says why (its kind).
type ConnClose struct {
	ConnID string `json:"conn_id"`
	Error  *Error `json:"error,omitempty"`
}

// ConnNotice is the params of any of conn/data, conn/credit and
// conn/close at once: a read loop decodes a connection notification once,
// whichever it is, then goes by the method.
type ConnNotice struct {
	ConnID string `json:"conn_id"`
	Data   []byte `json:"data"`
	EOF    bool   `json:"eof"`
	Bytes  int64  `json:"bytes"`
	Error  *Error `json:"error"`
}

// ErrConnReset is what a connection's Read and Write return after the
// other side reset it without saying why.
var ErrConnReset = errors.New("connection reset by the other side")

// Sender sends a connection stream's messages to the other side: Notify a
// JSON notification, Data a data frame (Stream.WriteData). Either may
// block (a pipe), never under a ConnEnd's lock.
type Sender interface {
	Notify(method string, params any) error
	Data(connID string, data []byte) error
}

// ConnEnd is one side's end of a connection stream: an io.ReadWriteCloser
// with CloseWrite, the same type on both sides of the protocol. What the
// other side sends arrives through Deliver, Grant and Reset, which never
// block (they run on a read loop, and send nothing there); Read, Write,
// CloseWrite and Close send through Sender, which may block (a pipe) but
// never under the end's lock.
type ConnEnd struct {
	ID     string
	window int64
	send   Sender
	// done is called once, when the connection is over on this side
	// (both directions ended, or a reset either way): forget its id.
	done func()

	mu   sync.Mutex
	cond *sync.Cond
	// Incoming.
	chunks   [][]byte
	received int64 // delivered and not yet read
	unacked  int64 // read and not yet granted back
	inEOF    bool
	// Outgoing.
	credit int64
	outEOF bool
	// The end: err is what Read and Write return after a reset.
	over bool
	err  error
}

// NewConnEnd is an end of connection id whose directions have window
// bytes each; send reaches the other side, done is called once the
// connection is over here.
func NewConnEnd(id string, window int64, send Sender, done func()) *ConnEnd {
	if window <= 0 {
		window = DefaultConnWindow
	}
	c := &ConnEnd{ID: id, window: window, send: send, done: done, credit: window}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// Deliver takes a conn/data from the other side. Data past the window, or
// after its EOF, is the other side breaking the protocol: the connection
// is reset both ways and the error says why.
func (c *ConnEnd) Deliver(m ConnData) error {
	c.mu.Lock()
	if c.over {
		c.mu.Unlock()
		return nil
	}
	var bad error
	switch {
	case c.inEOF && (len(m.Data) > 0 || m.EOF):
		bad = fmt.Errorf("connection %s: data after its end", c.ID)
	case c.received+c.unacked+int64(len(m.Data)) > c.window:
		bad = fmt.Errorf("connection %s: more data than its %d byte window", c.ID, c.window)
	}
	if bad != nil {
		c.mu.Unlock()
		err := protocol.Wrap(protocol.KindTransient, bad)
		c.reset(err, false, nil, true)
		// Told off the read loop: the other side may be blocked writing
		// to us, and this loop must never wait on it.
		go func() { _ = c.send.Notify(NotifyConnClose, ConnClose{ConnID: c.ID, Error: WireError(err)}) }()
		return bad
	}
	if len(m.Data) > 0 {
		c.chunks = append(c.chunks, m.Data)
		c.received += int64(len(m.Data))
	}
	if m.EOF {
		c.inEOF = true
	}
	finished := c.finishedLocked()
	c.mu.Unlock()
	c.cond.Broadcast()
	if finished {
		c.done()
	}
	return nil
}

// Grant takes a conn/credit from the other side.
func (c *ConnEnd) Grant(n int64) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	c.credit += n
	c.mu.Unlock()
	c.cond.Broadcast()
}

// Reset takes a conn/close from the other side (or the end of the whole
// session): Read gives what was delivered, then err; Write fails at once.
func (c *ConnEnd) Reset(err error) {
	if err == nil {
		err = ErrConnReset
	}
	c.reset(err, false, nil, false)
}

// reset ends the connection with err; tell sends conn/close with why (nil:
// a plain close); local drops what was delivered and not read.
func (c *ConnEnd) reset(err error, tell bool, why *Error, local bool) {
	c.mu.Lock()
	if c.over {
		c.mu.Unlock()
		return
	}
	c.over, c.err = true, err
	if local {
		c.chunks = nil
	}
	c.mu.Unlock()
	c.cond.Broadcast()
	if tell {
		_ = c.send.Notify(NotifyConnClose, ConnClose{ConnID: c.ID, Error: why})
	}
	c.done()
}

// WireError is err as a conn/close's error.
func WireError(err error) *Error {
	return &Error{Code: protocol.CodeOf(err), Message: err.Error(), Data: DataOf(err)}
}

// finishedLocked: both directions have ended, so the connection is over
// without a reset; it marks it so.
func (c *ConnEnd) finishedLocked() bool {
	if c.over || !c.inEOF || !c.outEOF || len(c.chunks) > 0 {
		return false
	}
	c.over, c.err = true, net.ErrClosed
	return true
}

// Read gives the other side's bytes, io.EOF after its half-close, or the
// reset's error.
func (c *ConnEnd) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.mu.Lock()
	for len(c.chunks) == 0 && !c.inEOF && !c.over {
		c.cond.Wait()
	}
	if len(c.chunks) == 0 {
		err := c.err
		if c.inEOF {
			err = io.EOF
		}
		c.mu.Unlock()
		return 0, err
	}
	n := copy(p, c.chunks[0])
	if n == len(c.chunks[0]) {
		c.chunks[0] = nil
		c.chunks = c.chunks[1:]
	} else {
		c.chunks[0] = c.chunks[0][n:]
	}
	c.received -= int64(n)
	c.unacked += int64(n)
	// Credit goes back in quarters of the window, so the sender is rarely
	// idle and a slow reader stalls only this connection.
	// None after the other side's end: it sends no more.
	grant := int64(0)
	if c.unacked >= c.window/4 && !c.inEOF && !c.over {
		grant, c.unacked = c.unacked, 0
	}
	finished := c.finishedLocked()
	c.mu.Unlock()
	if grant > 0 {
		_ = c.send.Notify(NotifyConnCredit, ConnCredit{ConnID: c.ID, Bytes: grant})
	}
	if finished {
		c.done()
	}
	return n, nil
}

// Write sends p within the credit the other side grants: it blocks while
// the window is spent, until credit, a reset or Close.
func (c *ConnEnd) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		c.mu.Lock()
		for c.credit <= 0 && !c.over && !c.outEOF {
			c.cond.Wait()
		}
		switch {
		case c.over:
			err := c.err
			c.mu.Unlock()
			return written, err
		case c.outEOF:
			c.mu.Unlock()
			return written, net.ErrClosed
		}
		n := min(int64(len(p)), c.credit, ConnChunk)
		c.credit -= n
		c.mu.Unlock()
		if err := c.send.Data(c.ID, p[:n]); err != nil {
			c.reset(protocol.Wrap(protocol.KindTransient, err), false, nil, true)
			return written, err
		}
		written += int(n)
		p = p[n:]
	}
	return written, nil
}

// CloseWrite half-closes: the other side reads its EOF, and may go on
// sending.
func (c *ConnEnd) CloseWrite() error {
	c.mu.Lock()
	if c.over || c.outEOF {
		c.mu.Unlock()
		return nil
	}
	c.outEOF = true
	finished := c.finishedLocked()
	c.mu.Unlock()
	c.cond.Broadcast()
	err := c.send.Notify(NotifyConnData, ConnData{ConnID: c.ID, EOF: true})
	if finished {
		c.done()
	}
	return err
}

// Close ends the connection both ways: the other side is told (conn/close)
// unless the connection was already over.
func (c *ConnEnd) Close() error {
	c.reset(net.ErrClosed, true, nil, true)
	return nil
}

// CloseWith resets the connection, telling the other side why: err (its
// kind) is what its Read and Write return.
func (c *ConnEnd) CloseWith(err error) { c.reset(net.ErrClosed, true, WireError(err), true) }
