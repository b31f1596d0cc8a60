package resident

import (
	"errors"
	"io"
	"sync"
)

// uploadPipe carries a streamed upload from its upload/data handlers to the
// provider, as io.Pipe did, and as io.Pipe each Write returns only once the
// reader has taken all its bytes: that is the backpressure, and it lets the
// bytes be the frame's own decoded buffer, recycled once Write returns.
// Unlike io.Pipe it has LendTo (provider.LentUpload), which gives the
// provider's writer (the engine's socket, say) the Write's bytes
// themselves instead of a copy in a buffer of the reader's: one copy of
// every uploaded byte fewer.
type uploadPipe struct {
	wmu  sync.Mutex  // one Write at a time
	lend chan []byte // a Write's bytes, lent to the reader
	took chan int    // how many of them the reader took; always answered
	done chan struct{}

	mu         sync.Mutex
	rerr, werr error // why each end closed; nil while open
	closeOnce  sync.Once
}

func newUploadPipe() *uploadPipe {
	return &uploadPipe{lend: make(chan []byte), took: make(chan int), done: make(chan struct{})}
}

// Write hands b to the reader and returns once it has taken all of b, or
// the pipe has closed.
func (p *uploadPipe) Write(b []byte) (int, error) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if err := p.writeErr(); err != nil {
		return 0, err
	}
	total := 0
	for len(b) > 0 {
		select {
		case p.lend <- b:
			n := <-p.took // the reader may still use b until it answers
			b = b[n:]
			total += n
		case <-p.done:
			return total, p.writeErr()
		}
	}
	return total, nil
}

// writeErr is what a Write fails with: nil while both ends are open.
func (p *uploadPipe) writeErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.werr != nil:
		return io.ErrClosedPipe
	case p.rerr != nil:
		return p.rerr
	}
	return nil
}

// readErr is what a read fails with once the pipe has closed: io.EOF
// after the writer's Close.
func (p *uploadPipe) readErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rerr != nil {
		return io.ErrClosedPipe
	}
	return p.werr
}

// Read copies from the bytes of the Write under way.
func (p *uploadPipe) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	select {
	case lent := <-p.lend:
		n := copy(b, lent)
		p.took <- n
		return n, nil
	case <-p.done:
		return 0, p.readErr()
	}
}

// LendTo writes each Write's bytes to w as they come, until the writer
// closes: nil after its Close, as io.Copy has it. The Write returns (and
// its buffer is recycled) once w.Write has.
func (p *uploadPipe) LendTo(w io.Writer) (int64, error) {
	var total int64
	for {
		select {
		case lent := <-p.lend:
			n, err := w.Write(lent)
			if err == nil && n < len(lent) {
				err = io.ErrShortWrite
			}
			p.took <- n
			total += int64(n)
			if err != nil {
				return total, err
			}
		case <-p.done:
			if err := p.readErr(); !errors.Is(err, io.EOF) {
				return total, err
			}
			return total, nil
		}
	}
}

// CloseWrite ends the upload: nil is its end (the reader then sees
// io.EOF), an error its failure. Only an end's first close counts.
func (p *uploadPipe) CloseWrite(err error) {
	if err == nil {
		err = io.EOF
	}
	p.close(&p.werr, err)
}

// CloseRead stops the reader: a Write under way or to come fails with err.
func (p *uploadPipe) CloseRead(err error) {
	if err == nil {
		err = io.ErrClosedPipe
	}
	p.close(&p.rerr, err)
}

func (p *uploadPipe) close(slot *error, err error) {
	p.mu.Lock()
	if *slot == nil {
		*slot = err
	}
	p.mu.Unlock()
	p.closeOnce.Do(func() { close(p.done) })
}
