package protocol

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// onEachPath runs check with the vector kernel (where this machine has
// one) and with the tables, which machines without one take.
func onEachPath(t testing.TB, check func()) {
	t.Helper()
	hw := vectorBase64
	defer func() { vectorBase64 = hw }()
	for _, v := range []bool{hw, false} {
		vectorBase64 = v
		check()
		if !hw {
			return
		}
	}
}

// AppendBase64 is base64.StdEncoding.AppendEncode, byte for byte, for
// every length around the step and every byte value, appended to a
// prefix.
func TestAppendBase64IsStdEncoding(t *testing.T) {
	onEachPath(t, func() { appendBase64IsStdEncoding(t) })
}

func appendBase64IsStdEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for n := range 200 {
		for range 20 {
			src := make([]byte, n)
			for i := range src {
				src[i] = byte(r.UintN(256))
			}
			want := base64.StdEncoding.AppendEncode([]byte("prefix:"), src)
			if got := AppendBase64([]byte("prefix:"), src); !bytes.Equal(got, want) {
				t.Fatalf("len %d: %q, want %q", n, got, want)
			}
		}
	}
	all := make([]byte, 3*4096)
	for v := range 4096 * 2 { // every 12-bit pair at both alignments
		all[v*3/2] |= byte(v)
	}
	if got, want := AppendBase64(nil, all), base64.StdEncoding.AppendEncode(nil, all); !bytes.Equal(got, want) {
		t.Fatal("the table differs from the standard alphabet")
	}
}

func FuzzAppendBase64(f *testing.F) {
	f.Add([]byte(""), []byte("x"))
	f.Add([]byte("ab"), []byte("\x00\xff\x10\x20\x30\x40\x50\x60\x70"))
	f.Fuzz(func(t *testing.T, prefix, src []byte) {
		want := base64.StdEncoding.AppendEncode(bytes.Clone(prefix), src)
		onEachPath(t, func() {
			if got := AppendBase64(bytes.Clone(prefix), src); !bytes.Equal(got, want) {
				t.Fatalf("vector %v: %q", vectorBase64, src)
			}
		})
	})
}

// The vector kernels store whole registers: neither writes a byte past
// what it returns, into the spare capacity of an append or past a dst of
// exactly the decoded length, for every length around their block sizes,
// with a bad character anywhere in the first blocks.
func TestBase64WritesNothingPastItsOutput(t *testing.T) {
	const guard = 0xa5
	r := rand.New(rand.NewPCG(11, 12))
	onEachPath(t, func() {
		for n := range 400 {
			src := make([]byte, n)
			for i := range src {
				src[i] = byte(r.UintN(256))
			}
			size := base64.StdEncoding.EncodedLen(n)
			dst := bytes.Repeat([]byte{guard}, size+64)[:0]
			out := AppendBase64(dst, src)
			if &out[:1][0] != &dst[:1][0] || string(out) != base64.StdEncoding.EncodeToString(src) {
				t.Fatalf("vector %v, len %d: encoded %q", vectorBase64, n, out)
			}
			if tail := dst[size : size+64]; bytes.Count(tail, []byte{guard}) != 64 {
				t.Fatalf("vector %v, len %d: the encoder wrote past its output: %x", vectorBase64, n, tail)
			}
			text := []byte(base64.StdEncoding.EncodeToString(src))
			variants := [][]byte{text}
			for _, bad := range []byte{'\n', '=', '"', 0x80} {
				for at := 0; at < min(len(text), 100); at += 1 + at/8 {
					b := bytes.Clone(text)
					b[at] = bad
					variants = append(variants, b)
				}
			}
			for _, v := range variants {
				want := base64.StdEncoding.DecodedLen(len(v))
				buf := bytes.Repeat([]byte{guard}, want+64)
				checkDecodeBase64(t, v)
				_, _ = DecodeBase64(buf[:want], v)
				if tail := buf[want:]; bytes.Count(tail, []byte{guard}) != 64 {
					t.Fatalf("vector %v, %q: the decoder wrote past dst: %x", vectorBase64, v, tail)
				}
			}
		}
	})
}

// BenchmarkBase64 compares AppendBase64 with the standard library on the
// sizes of data frames, in the same run.
func BenchmarkBase64(b *testing.B) {
	for _, n := range []int{4 << 10, 32 << 10} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i * 7)
		}
		dst := make([]byte, 0, base64.StdEncoding.EncodedLen(n))
		b.Run(fmt.Sprintf("size=%dK/stdlib", n>>10), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				dst = base64.StdEncoding.AppendEncode(dst[:0], src)
			}
		})
		b.Run(fmt.Sprintf("size=%dK/pairs", n>>10), func(b *testing.B) {
			defer func(hw bool) { vectorBase64 = hw }(vectorBase64)
			vectorBase64 = false
			b.SetBytes(int64(n))
			for b.Loop() {
				dst = AppendBase64(dst[:0], src)
			}
		})
		b.Run(fmt.Sprintf("size=%dK/AppendBase64", n>>10), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				dst = AppendBase64(dst[:0], src)
			}
		})
	}
}

// DecodeBase64 is base64.StdEncoding.Decode: the same bytes, count and
// failure for every length around the step, padded or not, with a bad
// character anywhere, CR and LF (which the standard library skips)
// included, and into a dst too short for the fast steps.
func TestDecodeBase64IsStdEncoding(t *testing.T) {
	onEachPath(t, func() { decodeBase64IsStdEncoding(t) })
}

func decodeBase64IsStdEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for n := range 120 {
		for range 10 {
			src := make([]byte, n)
			for i := range src {
				src[i] = byte(r.UintN(256))
			}
			text := base64.StdEncoding.EncodeToString(src)
			checkDecodeBase64(t, []byte(text))
			for _, bad := range []byte{'\n', '\r', '=', '-', '_', '"', '\\', 0, 0x80, 0xff} {
				if len(text) == 0 {
					break
				}
				b := []byte(text)
				b[r.IntN(len(b))] = bad
				checkDecodeBase64(t, b)
			}
			checkDecodeBase64(t, []byte(text+"="))
			checkDecodeBase64(t, []byte(text+"AAAA"))
			checkDecodeBase64(t, []byte(strings.TrimRight(text, "=")))
		}
	}
	// Every character at every position of a quantum.
	for c := range 256 {
		for at := range 24 {
			b := []byte("QUJDREVGR0hJSktMTU5PUA==")
			b[at] = byte(c)
			checkDecodeBase64(t, b)
		}
	}
	// A dst of exactly the decoded length, and one short of it.
	text := []byte(base64.StdEncoding.EncodeToString(make([]byte, 300)))
	for _, size := range []int{300, 299, 0} {
		want := make([]byte, size)
		got := make([]byte, size)
		func() {
			defer func() { _ = recover() }() // both panic alike on a short dst
			wn, werr := base64.StdEncoding.Decode(want, text)
			gn, gerr := DecodeBase64(got, text)
			if wn != gn || (werr == nil) != (gerr == nil) || !bytes.Equal(want, got) {
				t.Fatalf("dst %d: %d %v, want %d %v", size, gn, gerr, wn, werr)
			}
		}()
	}
}

func checkDecodeBase64(t *testing.T, src []byte) {
	t.Helper()
	want := make([]byte, base64.StdEncoding.DecodedLen(len(src)))
	got := make([]byte, len(want))
	wn, werr := base64.StdEncoding.Decode(want, src)
	gn, gerr := DecodeBase64(got, src)
	if wn != gn || (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) || !bytes.Equal(want[:wn], got[:gn]) {
		t.Fatalf("%q: %d %v, want %d %v", src, gn, gerr, wn, werr)
	}
	// The strict one: the same, but CR and LF fail.
	strict := make([]byte, len(want))
	sn, ok := DecodeBase64Strict(strict, src)
	wantOK := werr == nil && !bytes.ContainsAny(src, "\r\n")
	if ok != wantOK || (ok && (sn != wn || !bytes.Equal(want[:wn], strict[:sn]))) {
		t.Fatalf("strict %q: %d %v, want %d %v", src, sn, ok, wn, wantOK)
	}
}

func FuzzDecodeBase64(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("QUJDREVGR0hJSktMTU5PUA=="))
	f.Add([]byte("QUJDREVGR0hJSktMTU5PUA"))
	f.Add([]byte("QUJDREVG\nR0hJSktMTU5PUA=="))
	f.Add([]byte("QUJDREVGR0hJSk=MTU5PUA=="))
	// Past the vector kernels' block of 32 characters, with a bad one in
	// the second block.
	long := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("resident"), 12))
	f.Add([]byte(long))
	f.Add([]byte(long[:40] + "\n" + long[41:]))
	f.Add([]byte(long[:70] + "=" + long[71:]))
	f.Fuzz(func(t *testing.T, src []byte) {
		onEachPath(t, func() { checkDecodeBase64(t, src) })
	})
}

// BenchmarkDecodeBase64 compares DecodeBase64 with the standard library on
// the data of an upload/data frame, in the same run.
func BenchmarkDecodeBase64(b *testing.B) {
	n := 256 << 10
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i*131 + i>>8)
	}
	text := base64.StdEncoding.AppendEncode(nil, src)
	dst := make([]byte, base64.StdEncoding.DecodedLen(len(text))) // as every caller sizes it
	b.Run("stdlib", func(b *testing.B) {
		b.SetBytes(int64(n))
		for b.Loop() {
			_, _ = base64.StdEncoding.Decode(dst, text)
		}
	})
	b.Run("tables", func(b *testing.B) {
		defer func(hw bool) { vectorBase64 = hw }(vectorBase64)
		vectorBase64 = false
		b.SetBytes(int64(n))
		for b.Loop() {
			_, _ = DecodeBase64(dst, text)
		}
	})
	b.Run("DecodeBase64", func(b *testing.B) {
		b.SetBytes(int64(n))
		for b.Loop() {
			_, _ = DecodeBase64(dst, text)
		}
	})
}
