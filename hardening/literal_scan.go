package hardening

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// span is a half-open byte range [start, end) to be masked.
type span struct{ start, end int }

// scan appends to out the longest form match at every start position below
// limit, in start order, and returns the earliest position at which a form
// could still complete if more bytes followed (len(data) when final, or when
// there is none). Matches at or after that position are not reported: the
// caller holds those bytes back and scans them again with the next write.
// lanes is scratch space reused between calls.
func (ix *literalIndex) scan(data []byte, limit int, final bool, out []span, lanes *[4][]span) ([]span, int) {
	n, w := len(data), ix.window
	from := 0
	if bulk := min(limit, n-ix.maxLen+1); bulk >= laneMin {
		// Every form fits after each start below bulk, so nothing there
		// can be partial and the lane loop needs no early exit.
		clearLanes(lanes)
		ix.scanLanes(data, bulk, lanes)
		out = appendLanes(out, lanes)
		from = bulk
	}
	end := min(n, limit+w-1)
	shift, sb := ix.shift, ix.shiftBits
	for i := from + w - 1; i < end; {
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
	// may begin. A form that begins at s and runs past the end contains
	// the final block at offset n-4-s of its window, so the shift table
	// entry of that block bounds how far back such an s can be.
	first := max(0, n-w+1)
	if n >= blockLen {
		d := int(ix.shift[(binary.LittleEndian.Uint32(data[n-blockLen:])*hashMul)>>ix.shiftBits])
		first = max(first, n-blockLen+1-(w-blockLen+1-d))
	}
	for s := first; s < min(n, limit); s++ {
		if ix.mayStart(data[s:]) {
			return out, s
		}
	}
	return out, n
}

// laneMin is the shortest stretch worth splitting into lanes.
const laneMin = 1 << 10

// scanLanes scans window starts [0, end) as four interleaved lanes, each a
// quarter of the range, appending each lane's matches to its own slice. One
// scan is bound by the latency of its table load, since each jump depends on
// the previous one; four independent chains let the CPU overlap them (about
// 2x on this machine). Every form must fit after every start below end.
func (ix *literalIndex) scanLanes(data []byte, end int, lanes *[4][]span) {
	w := ix.window
	shift, sb := ix.shift, ix.shiftBits
	q := end / 4
	i0, i1, i2, i3 := w-1, q+w-1, 2*q+w-1, 3*q+w-1
	e0, e1, e2, e3 := i1, i2, i3, end+w-1
	for i0 < e0 && i1 < e1 && i2 < e2 && i3 < e3 {
		d0 := shift[(binary.LittleEndian.Uint32(data[i0-(blockLen-1):])*hashMul)>>sb]
		d1 := shift[(binary.LittleEndian.Uint32(data[i1-(blockLen-1):])*hashMul)>>sb]
		d2 := shift[(binary.LittleEndian.Uint32(data[i2-(blockLen-1):])*hashMul)>>sb]
		d3 := shift[(binary.LittleEndian.Uint32(data[i3-(blockLen-1):])*hashMul)>>sb]
		if d0 == 0 || d1 == 0 || d2 == 0 || d3 == 0 {
			lanes[0], d0 = ix.collect(data, i0, d0, lanes[0])
			lanes[1], d1 = ix.collect(data, i1, d1, lanes[1])
			lanes[2], d2 = ix.collect(data, i2, d2, lanes[2])
			lanes[3], d3 = ix.collect(data, i3, d3, lanes[3])
		}
		i0, i1, i2, i3 = i0+int(d0), i1+int(d1), i2+int(d2), i3+int(d3)
	}
	lanes[0] = ix.scanEnds(data, i0, e0, lanes[0])
	lanes[1] = ix.scanEnds(data, i1, e1, lanes[1])
	lanes[2] = ix.scanEnds(data, i2, e2, lanes[2])
	lanes[3] = ix.scanEnds(data, i3, e3, lanes[3])
}

// collect verifies the window ending at i when its jump d is 0, and returns
// the jump to take.
func (ix *literalIndex) collect(data []byte, i int, d uint8, out []span) ([]span, uint8) {
	if d != 0 {
		return out, d
	}
	s := i - ix.window + 1
	if best, _ := ix.verify(data, s, true); best > 0 {
		out = append(out, span{s, s + best})
	}
	return out, 1
}

// scanEnds finishes one lane of scanLanes: windows ending at [i, end).
func (ix *literalIndex) scanEnds(data []byte, i, end int, out []span) []span {
	shift, sb := ix.shift, ix.shiftBits
	for i < end {
		d := shift[(binary.LittleEndian.Uint32(data[i-(blockLen-1):])*hashMul)>>sb]
		out, d = ix.collect(data, i, d, out)
		i += int(d)
	}
	return out
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
// It runs on the last few bytes of every Write, so each length has its
// cheapest exact test.
func (ix *literalIndex) mayStart(tail []byte) bool {
	if len(tail) == 0 || !ix.short1[tail[0]] {
		return false
	}
	if len(tail) == 1 {
		return true
	}
	k2 := uint(tail[0]) | uint(tail[1])<<8
	if ix.short2[k2/64]&(1<<(k2%64)) == 0 {
		return false
	}
	switch len(tail) {
	case 2:
		return true
	case 3:
		_, ok := slices.BinarySearch(ix.short3, uint32(k2)|uint32(tail[2])<<16)
		return ok
	}
	k := binary.LittleEndian.Uint32(tail)
	if ix.shift[(k*hashMul)>>ix.shiftBits] > uint8(ix.window-blockLen) {
		return false // these four bytes occur in no window
	}
	b := (k * hashMul) >> ix.bucketBits
	for _, e := range ix.entries[ix.bucketOff[b]:ix.bucketOff[b+1]] {
		if e.key == k && bytes.HasPrefix(ix.forms[e.form], tail) {
			return true
		}
	}
	return false
}
