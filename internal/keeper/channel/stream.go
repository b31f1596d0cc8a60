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

	mu       sync.Mutex
	owed     int // consumed output not yet granted back
	exit     *keeperproto.Exit
	exited   chan struct{} // closed on Exit, End, or the channel breaking
	endErr   error         // why the stream ended, if not cleanly
	finished bool
}

func newCStream(c *Conn, id uint32, ordered bool) *cstream {
	st := &cstream{c: c, id: id, ctl: make(chan keeperproto.Frame, 4), exited: make(chan struct{})}
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

// consumed gives read output back as credit: in batches, or at once when
// the reader has drained everything (so the keeper never waits on us).
func (st *cstream) consumed(n int, drained bool) {
	st.mu.Lock()
	st.owed += n
	owed := st.owed
	if !drained && owed < st.c.window/4 {
		st.mu.Unlock()
		return
	}
	st.owed = 0
	st.mu.Unlock()
	select {
	case <-st.exited:
		return // the keeper sends nothing more
	default:
	}
	_ = st.c.send(keeperproto.ChanCredit, st.id, binary.BigEndian.AppendUint32(nil, uint32(owed)))
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
	close(st.exited)
	st.c.forget(st)
}

// broken is the channel breaking under the stream.
func (st *cstream) broken(err error) {
	st.mu.Lock()
	if st.finished {
		st.mu.Unlock()
		return
	}
	st.finished, st.endErr = true, err
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
