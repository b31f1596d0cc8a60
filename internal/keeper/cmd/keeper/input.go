package main

import (
	"os"
	"sync"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// inputQueue feeds the command's stdin from the streams' ChanStdin
// frames, giving each stream its credit back once its bytes are written.
// Bounded by that credit: a stream never has more than inputWindow queued.
type inputQueue struct {
	w *os.File
	// after, if set, runs once the feed ends: complete is an EOF after
	// every byte was written (not a stop, not a failed write).
	after  func(complete bool)
	mu     sync.Mutex
	cond   *sync.Cond
	queue  []inputChunk
	eof    bool
	closed bool
}

type inputChunk struct {
	l    link
	data []byte
}

func newInputQueue(w *os.File, closeOnEOF bool, after func(complete bool)) *inputQueue {
	q := &inputQueue{w: w, after: after}
	q.cond = sync.NewCond(&q.mu)
	go q.feed(w, closeOnEOF)
	return q
}

func (q *inputQueue) push(l link, data []byte) {
	q.mu.Lock()
	if q.closed || q.eof {
		q.mu.Unlock()
		_ = l.send(keeperproto.ChanCredit, creditPayload(len(data)))
		return
	}
	q.queue = append(q.queue, inputChunk{l, data})
	q.mu.Unlock()
	q.cond.Signal()
}

// closeInput is stdin's EOF (a terminal has none: its master stays open).
func (q *inputQueue) closeInput() {
	q.mu.Lock()
	q.eof = true
	q.mu.Unlock()
	q.cond.Signal()
}

// stop ends the feed: the command is gone.
func (q *inputQueue) stop() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Signal()
	// A write blocked on a pipe that a background process holds and never
	// reads would hold the feed forever.
	_ = q.w.SetWriteDeadline(time.Now())
}

func (q *inputQueue) feed(w *os.File, closeOnEOF bool) {
	broken := false
	for {
		q.mu.Lock()
		for len(q.queue) == 0 && !q.eof && !q.closed {
			q.cond.Wait()
		}
		if len(q.queue) == 0 || q.closed {
			rest, complete := q.queue, !q.closed && !broken
			q.queue = nil
			q.mu.Unlock()
			if closeOnEOF || !complete {
				w.Close()
			}
			for _, c := range rest {
				_ = c.l.send(keeperproto.ChanCredit, creditPayload(len(c.data)))
			}
			if q.after != nil {
				q.after(complete)
			}
			return
		}
		c := q.queue[0]
		q.queue = q.queue[1:]
		q.mu.Unlock()
		if !broken {
			_, err := gatedWrite(w, c.data)
			broken = err != nil
		}
		_ = c.l.send(keeperproto.ChanCredit, creditPayload(len(c.data)))
	}
}
