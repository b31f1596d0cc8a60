package external

import (
	"io"
	"sync"
	"time"
)

// outBuffer holds one stream's output between the read loop and the
// resident's pump. It never blocks the writer: the credit window bounds it.
type outBuffer struct {
	e      *process
	mu     sync.Mutex
	cond   *sync.Cond
	chunks [][]byte
	closed bool
	err    error
	// onRead, when set, is told how many bytes the reader took (credit).
	onRead func(int)
	// started is closed by the first data or the end.
	started chan struct{}
	once    sync.Once
}

func newOutBuffer(e *process) *outBuffer {
	b := &outBuffer{e: e, started: make(chan struct{})}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *outBuffer) push(data []byte) {
	if len(data) == 0 {
		return
	}
	b.mu.Lock()
	b.chunks = append(b.chunks, data)
	b.mu.Unlock()
	b.cond.Signal()
	b.once.Do(func() { close(b.started) })
}

func (b *outBuffer) close() { b.closeWith(nil) }

// closeWith ends the buffer; a reader gets the data already in it, then err
// (io.EOF when nil).
func (b *outBuffer) closeWith(err error) {
	b.mu.Lock()
	if !b.closed {
		b.closed, b.err = true, err
	}
	b.mu.Unlock()
	b.cond.Broadcast()
}

func (b *outBuffer) Read(p []byte) (int, error) {
	b.mu.Lock()
	for len(b.chunks) == 0 && !b.closed {
		b.cond.Wait()
	}
	if len(b.chunks) == 0 {
		err := b.err
		b.mu.Unlock()
		if err == nil {
			err = io.EOF
		}
		return 0, err
	}
	n := copy(p, b.chunks[0])
	if n == len(b.chunks[0]) {
		b.chunks[0] = nil
		b.chunks = b.chunks[1:]
	} else {
		b.chunks[0] = b.chunks[0][n:]
	}
	b.mu.Unlock()
	if b.e != nil {
		b.e.consumed(n)
	}
	if b.onRead != nil {
		b.onRead(n)
	}
	return n, nil
}

func timeAfter(d time.Duration) <-chan time.Time { return time.After(d) }
