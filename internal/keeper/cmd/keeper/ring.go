package main

import (
	"sort"
	"sync"
)

// ring keeps the last size bytes of a detached exec's output as tagged
// chunks (stdout and stderr interleaved as they were read), with offsets
// counted over both since the exec started. What it lets go is counted in
// dropped, never lost silently.
type ring struct {
	mu       sync.Mutex
	cond     *sync.Cond
	size     int64
	chunks   []chunk
	start    int64 // offset of the oldest byte kept
	end      int64 // offset after the newest
	dropped  int64
	finished bool
}

type chunk struct {
	off  int64
	typ  byte
	data []byte
}

func newRing(size int64) *ring {
	r := &ring{size: size}
	r.cond = sync.NewCond(&r.mu)
	return r
}

func (r *ring) write(typ byte, data []byte) {
	r.mu.Lock()
	r.chunks = append(r.chunks, chunk{off: r.end, typ: typ, data: append([]byte(nil), data...)})
	r.end += int64(len(data))
	for r.end-r.start > r.size {
		first := &r.chunks[0]
		cut := min(int64(len(first.data)), r.end-r.start-r.size)
		first.data = first.data[cut:]
		first.off += cut
		r.start += cut
		r.dropped += cut
		if len(first.data) == 0 {
			r.chunks[0] = chunk{}
			r.chunks = r.chunks[1:]
		}
	}
	r.mu.Unlock()
	r.cond.Broadcast()
}

// read waits for output at cursor (or past it, if the ring let it go) and
// returns up to max bytes of one chunk, and the cursor after them. With
// no data, finished says the exec's output is complete; stop ends the wait
// early (the stream ended).
func (r *ring) read(cursor int64, max int, stop func() bool) (typ byte, data []byte, next int64, finished bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		if stop() {
			return 0, nil, cursor, false
		}
		cursor = maxInt64(cursor, r.start)
		if cursor < r.end {
			i := sort.Search(len(r.chunks), func(i int) bool { return r.chunks[i].off+int64(len(r.chunks[i].data)) > cursor })
			c := r.chunks[i]
			from := cursor - c.off
			n := min(int64(len(c.data))-from, int64(max))
			return c.typ, append([]byte(nil), c.data[from:from+n]...), cursor + n, false
		}
		if r.finished {
			return 0, nil, cursor, true
		}
		r.cond.Wait()
	}
}

// state is what Attach and ListExecs report.
func (r *ring) state() (start, end, kept, dropped int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.start, r.end, r.end - r.start, r.dropped
}

func (r *ring) finish() {
	r.mu.Lock()
	r.finished = true
	r.mu.Unlock()
	r.cond.Broadcast()
}

// wake makes waiting readers look at their stop condition again.
func (r *ring) wake() {
	r.mu.Lock()
	r.mu.Unlock()
	r.cond.Broadcast()
}

func maxInt64(a, b int64) int64 { return max(a, b) }
