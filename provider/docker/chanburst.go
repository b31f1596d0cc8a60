package docker

import (
	"io"
	"time"
)

// burstReader is the attach stream's connection as the demultiplexer's
// buffer reads it: after a read that came back with a bulk stream's
// dribble (more than an interactive write, less than half the buffer), it
// waits burstPause before the next read, so that one read takes what the
// engine wrote meanwhile.
//
// Why: the engine copies the keeper's stdout onto the attach connection in
// pieces of about 8 KiB, and a reader that reads each piece as it lands
// pays a wake-up, an epoll wait, a read and the Go scheduler's futex
// hand-offs per piece: measured with `perf stat` on the resident under
// `resident-bench --only streaming`, 56k reads and 115k context switches
// for 340 MB, the largest share of its CPU per byte (docs/performance.md,
// "Exec output: fewer, larger reads"). Waiting a millisecond while the
// stream is in bulk turns several pieces into one read. The wait costs
// latency only after a read of burstMin bytes or more: an interactive
// exec's small writes, the channel's control frames and an exec of
// `true` are read at once; a read that fills half the buffer or more
// (the engine is ahead) is followed at once too, so the wait never caps a
// fast stream. What the keeper may send meanwhile is bounded by the
// streams' credit windows, as before.
type burstReader struct {
	r     io.Reader
	pause bool // the last read was a bulk dribble: wait before the next
}

// burstMin is the smallest read counted as bulk; burstPause the wait after
// one (the netpoller sleeps in whole milliseconds: a shorter wait would be
// a millisecond anyway whenever the resident is otherwise idle).
const (
	burstMin   = 4 << 10
	burstPause = time.Millisecond
)

func (b *burstReader) Read(p []byte) (int, error) {
	if b.pause {
		time.Sleep(burstPause)
	}
	n, err := b.r.Read(p)
	b.pause = err == nil && bulkDribble(n, len(p))
	return n, err
}

// bulkDribble says a read of n bytes into a buffer of size is a bulk
// stream arriving in pieces: worth waiting for more before the next read.
func bulkDribble(n, size int) bool { return n >= burstMin && n < size/2 }
