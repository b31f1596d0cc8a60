package hardening

import (
	"bytes"
	"encoding/binary"
)

// span is a half-open byte range [start, end) to be masked.
type span struct{ start, end int }

// scan appends to out the longest form match at every start position below
// limit, in start order, and returns the earliest position at which a form
// could still complete if more bytes followed (len(data) when final, or when
// there is none). Matches at or after that position are not reported: the
// caller holds those bytes back and scans them again with the next write.
func (ix *literalIndex) scan(data []byte, limit int, final bool, out []span) ([]span, int) {
	n, w := len(data), ix.window
	end := min(n, limit+w-1)
	shift, sb := ix.shift, ix.shiftBits
	for i := w - 1; i < end; {
		d := shift[(binary.LittleEndian.Uint32(data[i-(blockLen-1):])*hashMul)>>sb]
		if d != 0 {
			i += int(d)
			continue
		}
		s := i - w + 1
		best, partial := ix.verify(data, s, final)
		if partial {
			return out, s
		}
		if best > 0 {
			out = append(out, span{s, s + best})
		}
		i++
	}
	if final {
		return out, n
	}
	// Fewer than window bytes remain from here on: no form fits, but one
	// may begin.
	for s := max(0, n-w+1); s < min(n, limit); s++ {
		if ix.mayStart(data[s:]) {
			return out, s
		}
	}
	return out, n
}

// verify returns the length of the longest form at data[s:] (0 if none) and
// whether a longer form could still match there once more bytes arrive.
// There are at least window ≥ 4 bytes at s.
func (ix *literalIndex) verify(data []byte, s int, final bool) (int, bool) {
	rest := data[s:]
	k := binary.LittleEndian.Uint32(rest)
	b := (k * hashMul) >> ix.bucketBits
	for _, e := range ix.entries[ix.bucketOff[b]:ix.bucketOff[b+1]] {
		if e.key != k {
			continue
		}
		f := ix.forms[e.form]
		if len(f) <= len(rest) {
			if bytes.Equal(rest[:len(f)], f) {
				// Entries are longest first, so nothing after this can
				// be longer or still incomplete.
				return len(f), false
			}
		} else if !final && bytes.Equal(rest, f[:len(rest)]) {
			return 0, true
		}
	}
	return 0, false
}

// mayStart reports whether tail, shorter than every form, is a prefix of one.
func (ix *literalIndex) mayStart(tail []byte) bool {
	switch len(tail) {
	case 0:
		return false
	case 1:
		return ix.short1[tail[0]]
	case 2:
		k := uint(tail[0]) | uint(tail[1])<<8
		return ix.short2[k/64]&(1<<(k%64)) != 0
	case 3:
		_, ok := ix.short3[uint32(tail[0])|uint32(tail[1])<<8|uint32(tail[2])<<16]
		return ok
	}
	k := binary.LittleEndian.Uint32(tail)
	b := (k * hashMul) >> ix.bucketBits
	for _, e := range ix.entries[ix.bucketOff[b]:ix.bucketOff[b+1]] {
		if e.key == k && bytes.HasPrefix(ix.forms[e.form], tail) {
			return true
		}
	}
	return false
}
