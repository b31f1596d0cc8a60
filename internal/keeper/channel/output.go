package channel

import (
	"io"
	"sync"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// output is one stream's output as it arrives (stdout or stderr of an
// exec, a read file's bytes), bounded by the credit this side granted:
// the keeper sends no more than the window until Read consumes, and each
// Read hands the consumed bytes back as credit.
type output struct {
	mu     sync.Mutex
	cond   *sync.Cond
	chunks [][]byte
	off    int   // bytes of chunks[0] already read
	err    error // io.EOF or why the stream failed, once no more comes
	// consumed is told how many bytes Read took (the stream's credit).
	consumed func(n int, drained bool)
}

func newOutput(consumed func(int, bool)) *output {
	o := &output{consumed: consumed}
	o.cond = sync.NewCond(&o.mu)
	return o
}

func (o *output) push(data []byte) {
	o.mu.Lock()
	if o.err == nil {
		o.chunks = append(o.chunks, data)
	}
	o.mu.Unlock()
	o.cond.Broadcast()
}

// close ends the output: readers get what is buffered, then err.
func (o *output) close(err error) {
	o.mu.Lock()
	if o.err == nil {
		o.err = err
	}
	o.mu.Unlock()
	o.cond.Broadcast()
}

// abort ends the output at once, dropping what is buffered.
func (o *output) abort(err error) {
	o.mu.Lock()
	o.chunks, o.off = nil, 0
	o.err = err
	o.mu.Unlock()
	o.cond.Broadcast()
}

func (o *output) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	o.mu.Lock()
	for len(o.chunks) == 0 && o.err == nil {
		o.cond.Wait()
	}
	if len(o.chunks) == 0 {
		err := o.err
		o.mu.Unlock()
		return 0, err
	}
	n := 0
	for n < len(p) && len(o.chunks) > 0 {
		c := copy(p[n:], o.chunks[0][o.off:])
		n += c
		if o.off += c; o.off == len(o.chunks[0]) {
			// Only here: it was copied out. Released whole (not the
			// slice past a partial read), so its buffer goes back to
			// the list of its size.
			keeperproto.ReleasePayload(o.chunks[0])
			o.chunks[0] = nil
			o.chunks = o.chunks[1:]
			o.off = 0
		}
	}
	drained := len(o.chunks) == 0
	o.mu.Unlock()
	o.consumed(n, drained)
	return n, nil
}

var _ io.Reader = (*output)(nil)
