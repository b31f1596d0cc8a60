//go:build linux

package local

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
)

// maxDrain bounds what a reader takes after the grace: at most a pipe's
// buffer is waiting, but a background child could keep writing for ever.
const maxDrain = 1 << 20

// outputReader reads one output pipe until EOF, or, once the main process
// exited and the grace deadline passed, until the pipe's buffer is empty.
// That lets a reader finish while a background child still holds the write
// end, without losing what the main process wrote. Read is called from one
// goroutine (the resident's pump), as io.Reader implies.
type outputReader struct {
	f        *os.File
	done     chan struct{}
	once     sync.Once
	draining bool
	drained  int
	ended    bool
}

func newOutputReader(f *os.File) *outputReader {
	return &outputReader{f: f, done: make(chan struct{})}
}

func (r *outputReader) Read(b []byte) (int, error) {
	if r.ended {
		return 0, io.EOF
	}
	if len(b) == 0 {
		return 0, nil
	}
	if !r.draining {
		n, err := r.f.Read(b)
		if n > 0 || err == nil {
			return n, nil // a pending error comes back on the next Read
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			r.finish() // EOF: every writer is gone
			return 0, io.EOF
		}
		// The grace ran out. Clear the deadline, which would also fail
		// the raw reads below, and take only what is already buffered.
		r.draining = true
		_ = r.f.SetReadDeadline(time.Time{})
	}
	if r.drained < maxDrain {
		if n := readBuffered(r.f, b[:min(len(b), maxDrain-r.drained)]); n > 0 {
			r.drained += n
			return n, nil
		}
	}
	r.finish()
	return 0, io.EOF
}

// finish closes the read end: a background child writing later gets EPIPE
// instead of filling a pipe nobody reads.
func (r *outputReader) finish() {
	r.ended = true
	r.once.Do(func() {
		_ = r.f.Close()
		close(r.done)
	})
}

// readBuffered reads without waiting: the pipe is non-blocking under Go's
// poller, so an empty pipe answers EAGAIN at once.
func readBuffered(f *os.File, b []byte) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = rc.Read(func(fd uintptr) bool {
		for {
			n, err = syscall.Read(int(fd), b)
			if err != syscall.EINTR {
				return true // done either way: never park on the poller
			}
		}
	})
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// stdinWriter is the host's end of the stdin pipe. Close is idempotent
// because both the resident (on eof) and the process (on exit) close it.
type stdinWriter struct {
	f    *os.File
	once sync.Once
}

func (w *stdinWriter) Write(b []byte) (int, error) { return w.f.Write(b) }

func (w *stdinWriter) Close() error {
	var err error
	w.once.Do(func() { err = w.f.Close() })
	return err
}
