package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"runtime"
	"slices"

	vector "github.com/segmentio/asm/base64"
	"github.com/segmentio/asm/cpu"
	"github.com/segmentio/asm/cpu/x86"
)

// vectorBase64 says segmentio/asm's base64 has a vector kernel here (AVX2
// on amd64, NEON on arm64): 10x this package's table encoder and 6.7x its
// table decoder on this project's machines (BenchmarkBase64,
// BenchmarkDecodeBase64). Elsewhere it is the standard library's, slower
// than the tables below, which stay for those machines.
var vectorBase64 = runtime.GOARCH == "arm64" || cpu.X86.Has(x86.AVX2)

// AppendBase64 appends src in standard, padded base64 to dst: exactly
// base64.StdEncoding.AppendEncode's bytes, many times faster. It is the
// encoding of every data frame the resident sends (exec/output,
// store/data), where it was the largest cost after the scrubber. With a
// vector kernel it is segmentio/asm's encoder (whose tail and padding are
// the standard library's); without one, six input bytes become eight
// characters per step, from a table of the 4096 character pairs (8 KiB)
// instead of one lookup per character, and the last bytes, and the
// padding, are the standard library's.
func AppendBase64(dst, src []byte) []byte {
	n := base64.StdEncoding.EncodedLen(len(src))
	dst = slices.Grow(dst, n)
	out := dst[len(dst) : len(dst)+n]
	if vectorBase64 {
		vector.StdEncoding.Encode(out, src)
		return dst[:len(dst)+n]
	}
	si, di := 0, 0
	// Each step reads 8 bytes and uses 6: stop while 8 remain.
	for ; si+8 <= len(src); si, di = si+6, di+8 {
		v := binary.BigEndian.Uint64(src[si:])
		w := uint64(base64Pairs[v>>52]) |
			uint64(base64Pairs[(v>>40)&0xfff])<<16 |
			uint64(base64Pairs[(v>>28)&0xfff])<<32 |
			uint64(base64Pairs[(v>>16)&0xfff])<<48
		binary.LittleEndian.PutUint64(out[di:], w)
	}
	base64.StdEncoding.Encode(out[di:], src[si:])
	return dst[:len(dst)+n]
}

// base64Pairs[v] is the two characters of the 12 bits v, the first in
// the low byte.
var base64Pairs = func() (t [4096]uint16) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for v := range t {
		t[v] = uint16(alphabet[v>>6]) | uint16(alphabet[v&63])<<8
	}
	return t
}()

// DecodeBase64 is base64.StdEncoding.Decode(dst, src), with the same
// result for every input (the bytes written, their count, and whether it
// fails), many times faster on the text of data frames. It decodes every
// frame an upload brings (upload/data), where the standard library's
// decoder was the resident's largest cost. With a vector kernel it is
// segmentio/asm's decoder, which decodes blocks of 32 characters of the
// alphabet and leaves the rest, from the first other character on, to the
// standard library: its bytes and count are the standard library's; a
// failure is decoded again by the standard library alone, for its error
// and offset. Without one, characters become bytes from four tables that
// hold each character's six bits already in place, with one check for a
// character outside the alphabet per step (sixteen characters, then
// eight) instead of one per character. The last quantum (its padding) is
// the standard library's, and so is all of src when any character is not
// of the alphabet (CR and LF, which the standard library skips, included),
// so the answer and its errors are exactly the standard library's.
func DecodeBase64(dst, src []byte) (int, error) {
	if vectorFits(dst, src) {
		if n, err := vector.StdEncoding.Decode(dst, src); err == nil {
			return n, nil
		}
		return base64.StdEncoding.Decode(dst, src)
	}
	si, di, ok := decodeSteps(dst, src)
	if !ok {
		return base64.StdEncoding.Decode(dst, src)
	}
	n, err := base64.StdEncoding.Decode(dst[di:], src[si:])
	if err != nil {
		// The standard library's own error, offset and all.
		return base64.StdEncoding.Decode(dst, src)
	}
	return di + n, nil
}

// DecodeBase64Strict is DecodeBase64 for a JSON string's text: it fails
// (false) where DecodeBase64 fails and also on CR or LF, which the
// standard library skips but a JSON string cannot hold raw, so its
// caller need not look for them first. The resident's data frames and
// the Go client's both decode with it.
func DecodeBase64Strict(dst, src []byte) (int, bool) {
	if vectorFits(dst, src) {
		if bytes.IndexByte(src, '\n') >= 0 || bytes.IndexByte(src, '\r') >= 0 {
			return 0, false
		}
		n, err := vector.StdEncoding.Decode(dst, src)
		return n, err == nil
	}
	si, di, ok := decodeSteps(dst, src)
	if !ok {
		return 0, false
	}
	tail := src[si:] // under 12 characters
	if bytes.IndexByte(tail, '\n') >= 0 || bytes.IndexByte(tail, '\r') >= 0 {
		return 0, false
	}
	n, err := base64.StdEncoding.Decode(dst[di:], tail)
	if err != nil {
		return 0, false
	}
	return di + n, true
}

// vectorFits says the vector decoder may take src into dst: its kernel
// stores 32 bytes for every 24 it decodes and relies on dst having room for
// all of src, where the standard library checks each write (and panics on
// a short dst, which the callers never pass).
func vectorFits(dst, src []byte) bool {
	return vectorBase64 && len(dst) >= base64.StdEncoding.DecodedLen(len(src))
}

// decodeSteps decodes src into dst eight characters at a time while the
// last quantum is still ahead, and says how far it went; false: a
// character outside the alphabet.
func decodeSteps(dst, src []byte) (si, di int, ok bool) {
	// Sixteen characters at a time first (one check for two steps:
	// faster still), then eight.
	for ; si+20 <= len(src) && di+14 <= len(dst); si, di = si+16, di+12 {
		s := src[si : si+16 : si+16]
		a := base64Dec[0][s[0]] | base64Dec[1][s[1]] | base64Dec[2][s[2]] | base64Dec[3][s[3]]
		b := base64Dec[0][s[4]] | base64Dec[1][s[5]] | base64Dec[2][s[6]] | base64Dec[3][s[7]]
		c := base64Dec[0][s[8]] | base64Dec[1][s[9]] | base64Dec[2][s[10]] | base64Dec[3][s[11]]
		d := base64Dec[0][s[12]] | base64Dec[1][s[13]] | base64Dec[2][s[14]] | base64Dec[3][s[15]]
		if (a|b|c|d)&base64Bad != 0 {
			return si, di, false
		}
		o := dst[di : di+14 : di+14]
		binary.BigEndian.PutUint64(o, uint64(a)<<40|uint64(b)<<16)
		binary.BigEndian.PutUint64(o[6:], uint64(c)<<40|uint64(d)<<16)
	}
	// Each step reads 8 characters and writes 8 bytes, of which 6 count:
	// stop while the last quantum is still ahead and dst has room for 8.
	for ; si+12 <= len(src) && di+8 <= len(dst); si, di = si+8, di+6 {
		s := src[si : si+8 : si+8]
		a := base64Dec[0][s[0]] | base64Dec[1][s[1]] | base64Dec[2][s[2]] | base64Dec[3][s[3]]
		b := base64Dec[0][s[4]] | base64Dec[1][s[5]] | base64Dec[2][s[6]] | base64Dec[3][s[7]]
		if (a|b)&base64Bad != 0 {
			return si, di, false
		}
		binary.BigEndian.PutUint64(dst[di:], uint64(a)<<40|uint64(b)<<16)
	}
	return si, di, true
}

// base64Bad marks, in base64Dec, a character outside the alphabet.
const base64Bad = 1 << 31

// base64Dec[i][c] is the six bits of character c at position i of a
// quantum, shifted into place in its 24 bits, or base64Bad.
var base64Dec = func() (t [4][256]uint32) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := range t {
		for c := range t[i] {
			t[i][c] = base64Bad
		}
		for v, c := range []byte(alphabet) {
			t[i][c] = uint32(v) << (18 - 6*i)
		}
	}
	return t
}()
