package keeperproto

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func TestLFEscapedStreamHoldsNoNewlineAndReadsBack(t *testing.T) {
	for _, in := range [][]byte{
		nil,
		[]byte("plain"),
		[]byte("\n"),
		{lfEscape},
		{lfEscape, lfNewline, '\n', lfEscape, lfSelf},
		bytes.Repeat([]byte("ab\n\x1b\r\n"), 5000),
	} {
		var enc bytes.Buffer
		if _, err := NewLFEncoder(&enc).Write(in); err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(enc.Bytes(), '\n') >= 0 {
			t.Fatalf("%q escaped holds a newline: %q", in, enc.Bytes())
		}
		// One byte a read: an ESC and its second byte in different reads.
		got, err := io.ReadAll(NewLFDecoder(iotest.OneByteReader(bytes.NewReader(enc.Bytes()))))
		if err != nil || !bytes.Equal(got, in) {
			t.Fatalf("%q read back %q, %v", in, got, err)
		}
	}
}

func TestLFDecoderRefusesWhatNoEncoderWrites(t *testing.T) {
	if _, err := io.ReadAll(NewLFDecoder(bytes.NewReader([]byte{'a', lfEscape, 'x'}))); !errors.Is(err, ErrBadEscape) {
		t.Fatalf("ESC x: %v, want ErrBadEscape", err)
	}
	if _, err := io.ReadAll(NewLFDecoder(bytes.NewReader([]byte{'a', lfEscape}))); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a trailing ESC: %v, want io.ErrUnexpectedEOF", err)
	}
}

// FuzzLFEscape: whatever the bytes, the escaped form holds no newline and
// decodes back to them, however the reads cut it; whatever a stream holds,
// the decoder never returns more than it read or panics.
func FuzzLFEscape(f *testing.F) {
	f.Add([]byte("a\nb\x1bc"), []byte("\x1bN\x1bE\x1bx"))
	f.Add([]byte{}, []byte{lfEscape})
	f.Fuzz(func(t *testing.T, in, raw []byte) {
		enc := AppendLFEscaped(nil, in)
		if bytes.IndexByte(enc, '\n') >= 0 {
			t.Fatalf("escaped %q holds a newline", in)
		}
		got, err := io.ReadAll(NewLFDecoder(iotest.HalfReader(bytes.NewReader(enc))))
		if err != nil || !bytes.Equal(got, in) {
			t.Fatalf("%q read back %q, %v", in, got, err)
		}
		out, _ := io.ReadAll(NewLFDecoder(bytes.NewReader(raw)))
		if len(out) > len(raw) {
			t.Fatalf("decoded %d bytes from %d", len(out), len(raw))
		}
	})
}

func BenchmarkLFEscape(b *testing.B) {
	p := make([]byte, MaxPayload)
	for i := range p {
		p[i] = byte(i * 7919 >> 3)
	}
	b.SetBytes(int64(len(p)))
	var buf []byte
	for b.Loop() {
		buf = AppendLFEscaped(buf[:0], p)
	}
}
