package keeperproto

import (
	"bytes"
	"crypto/rand"
	"errors"
	"testing"
)

func sealPair(t *testing.T) (*Sealer, *Opener) {
	t.Helper()
	key := make([]byte, SealKeySize)
	_, _ = rand.Read(key)
	s, err := NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	o, err := NewOpener(key)
	if err != nil {
		t.Fatal(err)
	}
	return s, o
}

func readOne(t *testing.T, b []byte) Frame {
	t.Helper()
	f, err := NewFrameReader(bytes.NewReader(b)).Next()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A sealed frame reads back as the frame that was sealed, a whole
// MaxPayload one included; the wire holds none of the plaintext, nor its
// type or stream.
func TestSealRoundTrip(t *testing.T) {
	s, o := sealPair(t)
	secret := bytes.Repeat([]byte("canary-7f3a "), MaxPayload/12)
	for _, in := range []Frame{
		{Type: ChanStdout, Stream: 7, Gen: 3, Payload: secret},
		{Type: ChanExit, Stream: 7, Gen: 3, Payload: []byte(`{"code":0}`)},
		{Type: ChanStderr, Stream: 9, Gen: 3},
		{Type: ChanStdout, Stream: 1, Gen: 3, Payload: make([]byte, MaxPayload)},
	} {
		wire, err := s.AppendFrame(nil, in)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(wire, []byte("canary")) {
			t.Fatal("the sealed frame holds its plaintext")
		}
		outer := readOne(t, wire)
		if outer.Type != ChanSealed || outer.Stream != 0 || outer.Gen != in.Gen {
			t.Fatalf("outer frame %c stream %d gen %d", outer.Type, outer.Stream, outer.Gen)
		}
		got, err := o.Open(outer)
		if err != nil {
			t.Fatal(err)
		}
		if got.Type != in.Type || got.Stream != in.Stream || got.Gen != in.Gen || !bytes.Equal(got.Payload, in.Payload) {
			t.Fatalf("opened %c/%d/%d %d bytes, want %c/%d/%d %d bytes", got.Type, got.Stream, got.Gen, len(got.Payload), in.Type, in.Stream, in.Gen, len(in.Payload))
		}
		ReleasePayload(got.Payload)
	}
	if _, err := s.AppendFrame(nil, Frame{Type: ChanStdout, Payload: make([]byte, MaxPayload+1)}); err == nil {
		t.Fatal("a payload over MaxPayload was sealed")
	}
}

// Every single-bit change of a sealed frame's payload, a frame sealed
// with another key, a frame moved to another generation and a replayed
// one are refused; the frames after them still open.
func TestSealRefusesForgeries(t *testing.T) {
	s, o := sealPair(t)
	other, _ := sealPair(t)
	good, _ := s.AppendFrame(nil, Frame{Type: ChanStdout, Stream: 1, Gen: 2, Payload: []byte("hello")})
	f := readOne(t, good)
	for i := range f.Payload {
		for bit := range 8 {
			bad := f
			bad.Payload = append([]byte(nil), f.Payload...)
			bad.Payload[i] ^= 1 << bit
			if _, err := o.Open(bad); err == nil {
				t.Fatalf("byte %d bit %d flipped: opened", i, bit)
			}
		}
	}
	moved := f
	moved.Gen = 5
	moved.Payload = append([]byte(nil), f.Payload...)
	if _, err := o.Open(moved); !errors.Is(err, ErrSealForged) {
		t.Fatalf("another generation: %v, want ErrSealForged", err)
	}
	foreign, _ := other.AppendFrame(nil, Frame{Type: ChanStdout, Stream: 1, Gen: 2, Payload: []byte("hello")})
	if _, err := o.Open(readOne(t, foreign)); !errors.Is(err, ErrSealForged) {
		t.Fatalf("another key: %v, want ErrSealForged", err)
	}
	if _, err := o.Open(Frame{Type: ChanStdout, Stream: 1, Gen: 2, Payload: []byte("plaintext")}); !errors.Is(err, ErrSealForged) {
		t.Fatalf("a plaintext frame: %v, want ErrSealForged", err)
	}
	replay := append([]byte(nil), good...)
	if _, err := o.Open(readOne(t, good)); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Open(readOne(t, replay)); !errors.Is(err, ErrSealReplayed) {
		t.Fatalf("a replay: %v, want ErrSealReplayed", err)
	}
	next, _ := s.AppendFrame(nil, Frame{Type: ChanStdout, Stream: 1, Gen: 2, Payload: []byte("again")})
	if got, err := o.Open(readOne(t, next)); err != nil || string(got.Payload) != "again" {
		t.Fatalf("the next frame: %q, %v", got.Payload, err)
	}
	if _, err := NewSealer(make([]byte, 16)); err == nil {
		t.Fatal("a 16-byte key was taken")
	}
}

// BenchmarkFrameWrite: what sealing costs the keeper per 32 KiB output
// frame, against the plaintext frame it replaces (run both in one
// invocation and compare: docs/keeper-channel.md).
func BenchmarkFrameWrite(b *testing.B) {
	payload := make([]byte, MaxPayload)
	f := Frame{Type: ChanStdout, Stream: 1, Gen: 1, Payload: payload}
	b.Run("plain", func(b *testing.B) {
		var buf []byte
		b.SetBytes(MaxPayload)
		for b.Loop() {
			buf, _ = AppendFrame(buf[:0], f)
		}
	})
	b.Run("sealed", func(b *testing.B) {
		s, _ := NewSealer(make([]byte, SealKeySize))
		var buf []byte
		b.SetBytes(MaxPayload)
		for b.Loop() {
			buf, _ = s.AppendFrame(buf[:0], f)
		}
	})
}

// BenchmarkFrameRead: the holder's side, reading (and opening) frames.
func BenchmarkFrameRead(b *testing.B) {
	payload := make([]byte, MaxPayload)
	f := Frame{Type: ChanStdout, Stream: 1, Gen: 1, Payload: payload}
	key := make([]byte, SealKeySize)
	for _, sealed := range []bool{false, true} {
		name := "plain"
		if sealed {
			name = "sealed"
		}
		b.Run(name, func(b *testing.B) {
			s, _ := NewSealer(key)
			o, _ := NewOpener(key)
			var stream bytes.Buffer
			for range 64 {
				var enc []byte
				if sealed {
					enc, _ = s.AppendFrame(nil, f)
				} else {
					enc, _ = AppendFrame(nil, f)
				}
				stream.Write(enc)
			}
			wire := stream.Bytes()
			b.SetBytes(MaxPayload)
			r := bytes.NewReader(wire)
			fr := NewFrameReader(r)
			n := 0
			for b.Loop() {
				if n == 64 {
					// The same 64 frames again: a new opener, as their
					// counters start over.
					r.Reset(wire)
					fr = NewFrameReader(r)
					o, _ = NewOpener(key)
					n = 0
				}
				got, err := fr.Next()
				if err != nil {
					b.Fatal(err)
				}
				if sealed {
					if got, err = o.Open(got); err != nil {
						b.Fatal(err)
					}
				}
				ReleasePayload(got.Payload)
				n++
			}
		})
	}
}
