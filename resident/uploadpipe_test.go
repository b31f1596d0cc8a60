package resident

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// The pipe's Read and LendTo deliver every Write's bytes in order, and a
// Write returns only once they are all taken.
func TestUploadPipeCarriesWritesInOrder(t *testing.T) {
	for _, lend := range []bool{false, true} {
		p := newUploadPipe()
		got := make(chan []byte, 1)
		go func() {
			var buf bytes.Buffer
			if lend {
				_, _ = p.LendTo(&buf)
			} else {
				// A small buffer: a Write is taken in several reads.
				b := make([]byte, 3)
				for {
					n, err := p.Read(b)
					buf.Write(b[:n])
					if err != nil {
						break
					}
				}
			}
			got <- buf.Bytes()
		}()
		for _, part := range []string{"one ", "", "two ", "three"} {
			if n, err := p.Write([]byte(part)); n != len(part) || err != nil {
				t.Fatalf("write %q: %d, %v", part, n, err)
			}
		}
		p.CloseWrite(nil)
		if g := string(<-got); g != "one two three" {
			t.Fatalf("lend %v: %q", lend, g)
		}
		if n, err := p.Write([]byte("late")); n != 0 || !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("a write after the end: %d, %v", n, err)
		}
	}
}

// A reader that stops fails the Write under way and those to come with its
// error; a writer that fails ends the reader with its error.
func TestUploadPipeCloses(t *testing.T) {
	stop := errors.New("the write_file answered")
	p := newUploadPipe()
	wrote := make(chan error, 1)
	go func() {
		_, err := p.Write([]byte("never taken"))
		wrote <- err
	}()
	p.CloseRead(stop)
	if err := <-wrote; !errors.Is(err, stop) {
		t.Fatalf("write under way: %v", err)
	}
	if _, err := p.Write([]byte("x")); !errors.Is(err, stop) {
		t.Fatalf("write after the reader stopped: %v", err)
	}
	if _, err := p.Read(make([]byte, 1)); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("read after the reader stopped: %v", err)
	}

	broke := errors.New("the upload/data was cancelled")
	for _, lend := range []bool{false, true} {
		p := newUploadPipe()
		p.CloseWrite(broke)
		var err error
		if lend {
			_, err = p.LendTo(io.Discard)
		} else {
			_, err = p.Read(make([]byte, 1))
		}
		if !errors.Is(err, broke) {
			t.Fatalf("lend %v: the writer's failure read as %v", lend, err)
		}
	}
}

// A writer LendTo writes to that fails (the engine's connection) ends
// LendTo with its error, and the Write learns how much was taken.
func TestUploadPipeLendToAFailingWriter(t *testing.T) {
	p := newUploadPipe()
	wrote := make(chan int, 1)
	go func() {
		n, _ := p.Write([]byte("abcdef"))
		wrote <- n
	}()
	_, err := p.LendTo(shortWriter{})
	if !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("LendTo to a short writer: %v", err)
	}
	p.CloseRead(err)
	if n := <-wrote; n != 2 {
		t.Fatalf("the Write counted %d bytes taken, want 2", n)
	}
}

type shortWriter struct{}

func (shortWriter) Write(b []byte) (int, error) { return min(len(b), 2), nil }
