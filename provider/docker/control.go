package docker

import (
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
)

// control serialises frames to the keeper on the exec's stdin. A semaphore
// rather than a mutex, so a kill can give up waiting for a blocked stdin
// write instead of queueing behind it.
type control struct {
	conn net.Conn
	sem  chan struct{}
}

func newControl(conn net.Conn) *control {
	return &control{conn: conn, sem: make(chan struct{}, 1)}
}

// send writes one frame. wait > 0 bounds both the wait for the connection
// and the write itself; wait == 0 blocks (stdin backpressure).
func (c *control) send(typ byte, payload []byte, wait time.Duration) error {
	if wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case c.sem <- struct{}{}:
		case <-timer.C:
			return errKillBusy
		}
		_ = c.conn.SetWriteDeadline(time.Now().Add(wait))
		defer c.conn.SetWriteDeadline(time.Time{})
	} else {
		c.sem <- struct{}{}
	}
	defer func() { <-c.sem }()
	return keeperproto.WriteFrame(c.conn, typ, payload)
}

// errKillBusy: a stdin write held the connection for the whole wait.
var errKillBusy = protocol.Errorf(protocol.KindTransient, "exec: control stream busy")

// stdinWriter is the child's stdin, as data frames; Close sends EOF.
type stdinWriter struct {
	ctrl   *control
	closed atomic.Bool
}

func (w *stdinWriter) Write(b []byte) (int, error) {
	if w.closed.Load() {
		return 0, io.ErrClosedPipe
	}
	n := 0
	for len(b) > 0 {
		chunk := b[:min(len(b), keeperproto.MaxFramePayload)]
		if err := w.ctrl.send(keeperproto.FrameData, chunk, 0); err != nil {
			return n, err
		}
		n += len(chunk)
		b = b[len(chunk):]
	}
	return n, nil
}

func (w *stdinWriter) Close() error {
	if w.closed.Swap(true) {
		return nil
	}
	return w.ctrl.send(keeperproto.FrameEOF, nil, 0)
}
