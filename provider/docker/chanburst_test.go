package docker

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
)

// The wait before a read follows only a bulk stream's dribble: never an
// interactive read (under burstMin), never a read that filled half the
// buffer or more (the engine is ahead: read on at once), never an empty one.
func TestBulkDribble(t *testing.T) {
	const size = attachReadBuffer
	for _, tc := range []struct {
		n    int
		want bool
	}{
		{0, false},
		{1, false},
		{burstMin - 1, false},
		{burstMin, true},
		{8<<10 + 8, true}, // one engine piece of the keeper's stdout
		{size/2 - 1, true},
		{size / 2, false},
		{size, false},
	} {
		if got := bulkDribble(tc.n, size); got != tc.want {
			t.Errorf("bulkDribble(%d, %d) = %v, want %v", tc.n, size, got, tc.want)
		}
	}
}

// piecewise hands out its data in pieces of at most piece bytes, as the
// engine's writes land on the attach connection.
type piecewise struct {
	data  []byte
	piece int
}

func (p *piecewise) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), p.piece)], p.data)
	p.data = p.data[n:]
	return n, nil
}

// Waiting changes no byte: a burstReader over pieces of every shape (bulk
// dribbles that make it wait, small ones, whole buffers) is its source,
// as testing/iotest checks a reader.
func TestBurstReaderDeliversItsSource(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 16<<10) // 256 KiB
	for _, piece := range []int{1, 100, burstMin, 8<<10 + 8, 20 << 10, 1 << 20} {
		if err := iotest.TestReader(&burstReader{r: &piecewise{data: data, piece: piece}}, data); err != nil {
			t.Errorf("pieces of %d: %v", piece, err)
		}
	}
	// An error ends the waiting: the next read is not delayed by it, and
	// the error is the source's.
	b := &burstReader{r: iotest.ErrReader(io.ErrUnexpectedEOF)}
	if _, err := b.Read(make([]byte, 64)); err != io.ErrUnexpectedEOF || b.pause {
		t.Fatalf("after an error: %v, pause %v", err, b.pause)
	}
}
