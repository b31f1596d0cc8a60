package channel

import (
	"sync"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// chunkQueue is a detached exec's output as one ordered sequence of
// offset-tagged chunks, bounded by the stream's credit like output.
type chunkQueue struct {
	mu       sync.Mutex
	cond     *sync.Cond
	items    []Chunk
	err      error
	offset   int64 // of the next byte the keeper sends
	consumed func(n int, drained bool)
}

func newChunkQueue(consumed func(int, bool)) *chunkQueue {
	q := &chunkQueue{consumed: consumed}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *chunkQueue) push(typ byte, data []byte) {
	stream := "stdout"
	if typ == keeperproto.ChanStderr {
		stream = "stderr"
	}
	q.mu.Lock()
	if q.err == nil {
		q.items = append(q.items, Chunk{Stream: stream, Offset: q.offset, Data: data})
	}
	q.offset += int64(len(data))
	q.mu.Unlock()
	q.cond.Broadcast()
}

// setOffset is where the next chunk starts (the attach's start, or after a
// gap the ring dropped).
func (q *chunkQueue) setOffset(off int64) {
	q.mu.Lock()
	q.offset = off
	q.mu.Unlock()
}

func (q *chunkQueue) close(err error) {
	q.mu.Lock()
	if q.err == nil {
		q.err = err
	}
	q.mu.Unlock()
	q.cond.Broadcast()
}

// next waits for the next chunk; with credit, its bytes go back to the
// keeper as consumed (the split into Stdout and Stderr credits as those
// are read instead).
func (q *chunkQueue) next(credit bool) (Chunk, error) {
	q.mu.Lock()
	for len(q.items) == 0 && q.err == nil {
		q.cond.Wait()
	}
	if len(q.items) == 0 {
		err := q.err
		q.mu.Unlock()
		return Chunk{}, err
	}
	c := q.items[0]
	q.items[0] = Chunk{}
	q.items = q.items[1:]
	drained := len(q.items) == 0
	q.mu.Unlock()
	if credit {
		q.consumed(len(c.Data), drained)
	}
	return c, nil
}
