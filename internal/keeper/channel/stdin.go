package channel

import (
	"io"
	"sync"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// stdinWriter sends stdin within the keeper's credit.
type stdinWriter struct {
	st     *cstream
	mu     sync.Mutex
	closed bool
}

func (w *stdinWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, io.ErrClosedPipe
	}
	written := 0
	for written < len(p) {
		n := w.st.input.take(min(len(p)-written, keeperproto.MaxPayload))
		if n == 0 {
			if err := w.st.err(); err != nil {
				return written, err
			}
			return written, io.ErrClosedPipe // the exec ended
		}
		if err := w.st.c.send(keeperproto.ChanStdin, w.st.id, p[written:written+n]); err != nil {
			return written, err
		}
		written += n
	}
	return written, nil
}

func (w *stdinWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	select {
	case <-w.st.exited:
		return nil
	default:
	}
	return w.st.c.send(keeperproto.ChanStdinEOF, w.st.id, nil)
}
