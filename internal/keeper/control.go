package keeper

import (
	"io"
	"sync/atomic"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
)

// Conn is the resident's end of a "keeper run" stdin: whatever carries it
// (an engine's hijacked connection, a Kubernetes exec stream), it must let
// a write be bounded, so a kill never queues behind a stdin write forever.
type Conn interface {
	io.Writer
	SetWriteDeadline(time.Time) error
}

// Control serialises frames to the keeper on the exec's stdin. A semaphore
// rather than a mutex, so a kill can give up waiting for a blocked stdin
// write instead of queueing behind it.
type Control struct {
	conn Conn
	sem  chan struct{}
}

// NewControl speaks the keeper's control frames on conn.
func NewControl(conn Conn) *Control {
	return &Control{conn: conn, sem: make(chan struct{}, 1)}
}

// Send writes one frame. wait > 0 bounds both the wait for the connection
// and the write itself; wait == 0 blocks (stdin backpressure).
func (c *Control) Send(typ byte, payload []byte, wait time.Duration) error {
	if wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case c.sem <- struct{}{}:
		case <-timer.C:
			return ErrKillBusy
		}
		_ = c.conn.SetWriteDeadline(time.Now().Add(wait))
		defer c.conn.SetWriteDeadline(time.Time{})
	} else {
		c.sem <- struct{}{}
	}
	defer func() { <-c.sem }()
	return keeperproto.WriteFrame(c.conn, typ, payload)
}

// Kill asks the keeper to kill the run's whole tree, waiting at most wait
// for the connection: past that, the caller's fallback ("keeper kill" from
// a second exec) takes over.
func (c *Control) Kill(wait time.Duration) error {
	return c.Send(keeperproto.FrameKill, nil, wait)
}

// ErrKillBusy: a stdin write held the connection for the whole wait.
var ErrKillBusy = protocol.Errorf(protocol.KindTransient, "exec: control stream busy")

// StdinWriter is the child's stdin, as data frames; Close sends EOF.
type StdinWriter struct {
	ctrl   *Control
	closed atomic.Bool
}

// NewStdinWriter writes the child's stdin through ctrl.
func NewStdinWriter(ctrl *Control) *StdinWriter { return &StdinWriter{ctrl: ctrl} }

func (w *StdinWriter) Write(b []byte) (int, error) {
	if w.closed.Load() {
		return 0, io.ErrClosedPipe
	}
	n := 0
	for len(b) > 0 {
		chunk := b[:min(len(b), keeperproto.MaxFramePayload)]
		if err := w.ctrl.Send(keeperproto.FrameData, chunk, 0); err != nil {
			return n, err
		}
		n += len(chunk)
		b = b[len(chunk):]
	}
	return n, nil
}

func (w *StdinWriter) Close() error {
	if w.closed.Swap(true) {
		return nil
	}
	return w.ctrl.Send(keeperproto.FrameEOF, nil, 0)
}

// WriteEnv writes env (NAME=VALUE pairs) as the env frames a run with
// EnvStdin reads first, ending with the empty frame.
func WriteEnv(w io.Writer, env []string) error {
	var chunk []byte
	for _, kv := range env {
		if len(chunk) > 0 && len(chunk)+len(kv)+1 > keeperproto.MaxFramePayload {
			if err := keeperproto.WriteFrame(w, keeperproto.FrameEnv, chunk); err != nil {
				return err
			}
			chunk = nil
		}
		if len(kv)+1 > keeperproto.MaxFramePayload {
			return protocol.Errorf(protocol.KindInvalidRequest, "exec: env %.40q... is larger than %d bytes", kv, keeperproto.MaxFramePayload-1)
		}
		chunk = append(append(chunk, kv...), 0)
	}
	if len(chunk) > 0 {
		if err := keeperproto.WriteFrame(w, keeperproto.FrameEnv, chunk); err != nil {
			return err
		}
	}
	return keeperproto.WriteFrame(w, keeperproto.FrameEnv, nil)
}
