package keeperproto

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func frames(t testing.TB, fs ...Frame) []byte {
	var b []byte
	for _, f := range fs {
		var err error
		if b, err = AppendFrame(b, f); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func readAll(data []byte) ([]Frame, error) {
	fr := NewFrameReader(bytes.NewReader(data))
	var out []Frame
	for {
		f, err := fr.Next()
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
}

// Garbage, a corrupted frame and a frame cut into by another writer are
// skipped; every good frame around them is read, in order.
func TestFrameReaderResyncs(t *testing.T) {
	a := frames(t, Frame{Type: ChanStdin, Stream: 1, Gen: 2, Payload: []byte("first")})
	b := frames(t, Frame{Type: ChanExec, Stream: 3, Gen: 1, Payload: bytes.Repeat([]byte("b"), 1000)})
	c := frames(t, Frame{Type: ChanKill, Stream: 4, Gen: 2})
	corrupt := append([]byte(nil), a...)
	corrupt[len(corrupt)-1] ^= 1
	var stream []byte
	stream = append(stream, "garbage RKc"...)
	stream = append(stream, a...)
	stream = append(stream, corrupt...)
	stream = append(stream, b[:50]...)
	stream = append(stream, c...) // lands inside b
	stream = append(stream, b[50:]...)
	stream = append(stream, a...)
	got, err := readAll(stream)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v", err)
	}
	var types []byte
	for _, f := range got {
		types = append(types, f.Type)
	}
	if string(types) != string([]byte{ChanStdin, ChanKill, ChanStdin}) {
		t.Fatalf("frames %q", types)
	}
	if got[1].Stream != 4 || got[1].Gen != 2 || string(got[0].Payload) != "first" {
		t.Fatalf("decoded %+v", got)
	}
	if _, err := readAll(a[:HeaderSize+2]); !errors.Is(err, ErrTruncated) {
		t.Fatalf("cut frame: %v", err)
	}
	if _, err := AppendFrame(nil, Frame{Payload: make([]byte, MaxPayload+1)}); err == nil {
		t.Fatal("oversized payload encoded")
	}
}

// FuzzFrameReader: whatever the bytes, the reader neither panics nor
// returns a frame that is not, byte for byte, a good frame of the input.
func FuzzFrameReader(f *testing.F) {
	f.Add(frames(f, Frame{Type: ChanHello, Payload: []byte(`{"version":1,"nonce":"ab"}`)}))
	f.Add(frames(f, Frame{Type: ChanStdout, Stream: 7, Gen: 3, Payload: []byte("out")}, Frame{Type: ChanExit, Stream: 7, Gen: 3, Payload: []byte(`{"code":0}`)}))
	f.Add([]byte("RKc1RKc1RKc1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := readAll(data)
		if err == nil {
			t.Fatal("readAll ended without an error")
		}
		for _, fr := range got {
			enc := frames(t, fr)
			if !bytes.Contains(data, enc) {
				t.Fatalf("frame %+v is not in the input", fr)
			}
		}
	})
}

// Every payload from minPooled up is read into a buffer of the smallest
// size that holds it (never more than twice its bytes), a released buffer
// serves a later frame of its size, and what is not a whole pooled
// buffer is left alone.
func TestPayloadBuffers(t *testing.T) {
	for _, n := range []int{0, 1, minPooled - 1, minPooled, 1000, 1024, 1025, 4096, 5000, 16 << 10, MaxPayload - 1, MaxPayload} {
		data := bytes.Repeat([]byte{'x'}, n)
		fs, err := readAll(frames(t, Frame{Type: ChanStdout, Stream: 1, Gen: 1, Payload: data}))
		if !errors.Is(err, io.EOF) || len(fs) != 1 || !bytes.Equal(fs[0].Payload, data) {
			t.Fatalf("%d bytes: %d frames, %v", n, len(fs), err)
		}
		p := fs[0].Payload
		if n >= minPooled && (cap(p) < n || cap(p) > max(2*n, minPayloadClass) || cap(p) != classSize(payloadClass(n))) {
			t.Errorf("%d bytes in a buffer of %d", n, cap(p))
		}
		if n < minPooled && cap(p) >= minPayloadClass {
			t.Errorf("%d bytes took a pooled buffer of %d", n, cap(p))
		}
	}
	// A released buffer is the next of its size.
	b := newPayload(make([]byte, 3000))
	ReleasePayload(b)
	if again := newPayload(make([]byte, 2100)); &again[:1][0] != &b[:1][0] {
		t.Error("a released 4 KiB buffer did not serve the next payload of its size")
	}
	// Not a whole buffer: left alone.
	whole := newPayload(make([]byte, 8000))
	ReleasePayload(whole[:4000][100:])
	for range cap(payloads[payloadClass(4000)]) + 1 {
		if got := newPayload(make([]byte, 4000)); &got[:1][0] == &whole[100] {
			t.Fatal("a slice inside a buffer was pooled")
		}
	}
}
