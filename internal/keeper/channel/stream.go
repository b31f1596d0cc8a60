package channel

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// cstream is this side of one stream: the replies of its request (ctl),
// its outputs, the keeper's credit for its input, and its exit.
type cstream struct {
	c      *Conn
	id     uint32
	ctl    chan keeperproto.Frame // Started, Attached, Result, Failure: the request's answer
	stdout *output
	stderr *output
	input  *credit
	// chunks, for a detached exec, holds its output in order; Stdout and
	// Stderr are then fed from it (split) when asked for.
	chunks    *chunkQueue
	splitOnce sync.Once
	// onEnd, for a connection stream (NetConn), takes its ChanEnd frames:
	// there an empty End is a half-close, not the stream's end.
	onEnd func(payload []byte)

	mu sync.Mutex
	// win is the stream's output window now (it grows, see grow) and
	// base the one it started with (the Conn's, or NetWindow for a
	// connection stream); outstanding is the credit granted and not yet
	// read back: what the keeper may still send, what is on the way, and
	// what waits here.
	win, base   int
	outstanding int
	exit        *keeperproto.Exit
	exited      chan struct{} // closed on Exit, End, or the channel breaking
	endErr      error         // why the stream ended, if not cleanly
	finished    bool
}

func newCStream(c *Conn, id uint32, ordered bool) *cstream {
	st := &cstream{c: c, id: id, ctl: make(chan keeperproto.Frame, 4), exited: make(chan struct{}), win: c.window, base: c.window, outstanding: c.window}
	st.input = newCredit(c.welcome.Window)
	st.stdout = newOutput(st.consumed)
	st.stderr = newOutput(st.consumed)
	if ordered {
		st.chunks = newChunkQueue(st.consumed)
	}
	return st
}

func (st *cstream) setOffset(off int64) {
	if st.chunks != nil {
		st.chunks.setOffset(off)
	}
}

// split feeds an ordered stream's chunks to Stdout and Stderr, once; their
// reads give the credit back.
func (st *cstream) split() {
	if st.chunks == nil {
		return
	}
	st.splitOnce.Do(func() {
		go func() {
			for {
				c, err := st.chunks.next(false)
				if err != nil {
					st.stdout.close(err)
					st.stderr.close(err)
					return
				}
				if c.Stream == "stderr" {
					st.stderr.push(c.Data)
				} else {
					st.stdout.push(c.Data)
				}
			}
		}()
	})
}

// consumed gives read output back as credit, in batches of half the
// window: the keeper then always holds at least half of it (64 KiB, two
// frames, at the first window) for a reader that keeps up, and a fast
// stream costs one credit frame (a write here, a wake-up there) per half
// window instead of one per read. A grant that finds everything received
// read (drained) grows the window first: the reader was waiting for the
// keeper, which was waiting for credit. With many streams open, a grant
// tops up to the stream's share of the Conn's output budget instead
// (Conn.share), so the streams' windows shrink as more open and no stream
// grows past its share. What is owed when the stream ends is never needed.
func (st *cstream) consumed(n int, drained bool) {
	st.mu.Lock()
	st.outstanding -= n
	win := st.c.share(st.win)
	if st.outstanding > win/2 || st.finished {
		st.mu.Unlock()
		return
	}
	if drained && win == st.win {
		st.grow()
		win = st.c.share(st.win)
	}
	grant := win - st.outstanding
	st.outstanding = win
	st.mu.Unlock()
	select {
	case <-st.exited:
		return // the keeper sends nothing more
	default:
	}
	_ = st.c.send(keeperproto.ChanCredit, st.id, binary.BigEndian.AppendUint32(nil, uint32(grant)))
}

// grow doubles the window up to the Conn's MaxWindow, if the Conn's
// budget has room for it. st.mu is held.
func (st *cstream) grow() {
	want := min(2*st.win, st.c.maxWindow)
	d := int64(want - st.win)
	if d <= 0 {
		return
	}
	for {
		extra := st.c.extra.Load()
		if extra+d > st.c.growBudget {
			return
		}
		if st.c.extra.CompareAndSwap(extra, extra+d) {
			st.win = want
			return
		}
	}
}

// setWindow starts the stream with a window of its own instead of the
// Conn's, before its request is sent.
func (st *cstream) setWindow(w int) {
	st.mu.Lock()
	st.win, st.base, st.outstanding = w, w, w
	st.mu.Unlock()
}

// shrink gives the window's growth back to the Conn's budget when the
// stream ends. st.mu is held.
func (st *cstream) shrink() {
	if d := st.win - st.base; d > 0 {
		st.c.extra.Add(-int64(d))
		st.win = st.base
	}
}

// deliver takes one frame for this stream from the read loop; it never
// blocks (outputs are bounded by credit, ctl by the protocol).
func (st *cstream) deliver(f keeperproto.Frame) {
	switch f.Type {
	case keeperproto.ChanStdout, keeperproto.ChanStderr:
		switch {
		case st.chunks != nil:
			st.chunks.push(f.Type, f.Payload)
		case f.Type == keeperproto.ChanStdout:
			st.stdout.push(f.Payload)
		default:
			st.stderr.push(f.Payload)
		}
	case keeperproto.ChanOffset:
		if len(f.Payload) == 8 {
			st.setOffset(int64(binary.BigEndian.Uint64(f.Payload)))
		}
	case keeperproto.ChanCredit:
		if len(f.Payload) == 4 {
			st.input.grant(int(binary.BigEndian.Uint32(f.Payload)))
		}
	case keeperproto.ChanExit:
		var e keeperproto.Exit
		_ = json.Unmarshal(f.Payload, &e)
		st.finish(&e, nil)
	case keeperproto.ChanEnd:
		if st.onEnd != nil {
			st.onEnd(f.Payload)
			return
		}
		var err error
		if len(f.Payload) > 0 {
			var fail keeperproto.Failure
			_ = json.Unmarshal(f.Payload, &fail)
			err = errors.New(fail.Msg)
		}
		st.finish(nil, err)
	case keeperproto.ChanFailure:
		select {
		case st.ctl <- f:
		default:
		}
		var fail keeperproto.Failure
		_ = json.Unmarshal(f.Payload, &fail)
		st.finish(nil, fmt.Errorf("keeper: %s", fail.Msg))
	case keeperproto.ChanAttached:
		// The replay's chunks follow at once on the wire: their offsets
		// start here, set before the next frame is delivered.
		var a keeperproto.Attached
		if json.Unmarshal(f.Payload, &a) == nil {
			st.setOffset(a.Offset)
		}
		select {
		case st.ctl <- f:
		default:
		}
	default:
		select {
		case st.ctl <- f:
		default:
		}
	}
}

// finish ends the stream: outputs end after what they hold.
func (st *cstream) finish(e *keeperproto.Exit, err error) {
	st.mu.Lock()
	if st.finished {
		st.mu.Unlock()
		return
	}
	st.finished, st.exit, st.endErr = true, e, err
	st.shrink()
	st.mu.Unlock()
	end := err
	if end == nil {
		end = io.EOF
	}
	if st.chunks != nil {
		st.chunks.close(end) // the split closes the outputs after the last chunk
	} else {
		st.stdout.close(end)
		st.stderr.close(end)
	}
	st.input.close()
	// Forgotten before exited closes: whoever waited on the exit sees it
	// no longer counted among the Conn's open streams (Conn.share).
	st.c.forget(st)
	close(st.exited)
}

// broken is the channel breaking under the stream.
func (st *cstream) broken(err error) {
	st.mu.Lock()
	if st.finished {
		st.mu.Unlock()
		return
	}
	st.finished, st.endErr = true, err
	st.shrink()
	st.mu.Unlock()
	if st.chunks != nil {
		st.chunks.close(err)
	}
	st.stdout.close(err)
	st.stderr.close(err)
	st.input.close()
	close(st.exited)
}

// answer waits for the request's reply frame. A caller that goes first
// abandons the stream; kill also kills what it may have started (an exec,
// not an attach to one).
func (st *cstream) answer(ctx contextDone, kill bool) (keeperproto.Frame, error) {
	select {
	case f := <-st.ctl:
		return f, nil
	case <-st.exited:
		select {
		case f := <-st.ctl:
			return f, nil
		default:
		}
		return keeperproto.Frame{}, st.err()
	case <-ctx.Done():
		st.abandon(kill)
		return keeperproto.Frame{}, ctx.Err()
	}
}

// abandon gives up a request whose caller went: the keeper is told to
// drop the stream, and with kill an exec it may have started meanwhile
// is killed.
func (st *cstream) abandon(kill bool) {
	if kill {
		_ = st.c.send(keeperproto.ChanKill, st.id, nil)
	}
	_ = st.c.send(keeperproto.ChanRelease, st.id, nil)
	st.broken(context.Canceled)
	st.c.forget(st)
}

func (st *cstream) err() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.endErr != nil {
		return st.endErr
	}
	return st.c.Err()
}

// contextDone is the part of a context answer needs.
type contextDone interface {
	Done() <-chan struct{}
	Err() error
}
