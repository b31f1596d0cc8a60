package hardening

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// The literal search is Wu–Manber: a window of `window` bytes slides over the
// input; the last blockLen bytes of the window are hashed into a table that
// says how far the window may jump without skipping past the start of any
// form. With forms of 16+ bytes most windows jump 12–20 bytes after a single
// load and table lookup, which is what makes thousands of forms about as
// cheap as one. Only windows whose table entry is 0 are verified, through a
// table keyed by the first four bytes of every form.
const (
	blockLen  = 4
	maxWindow = 24 // longer windows jump further but fill the shift table
	hashMul   = 0x9E3779B1
)

type bucketEntry struct {
	key  uint32 // first four bytes of the form: rejects bucket collisions
	form uint32
}

// literalIndex is immutable once built; a new one replaces it whenever a
// secret is added, so scans never lock.
type literalIndex struct {
	forms      [][]byte
	window     int
	maxLen     int // longest form
	shift      []uint8
	shiftBits  uint // 32 - log2(len(shift))
	bucketOff  []uint32
	entries    []bucketEntry // per bucket, longest form first
	bucketBits uint
	short1     [256]bool            // first byte of some form
	short2     [1 << 16 / 64]uint64 // first two bytes of some form
	short3     []uint32             // first three bytes of every form, sorted
}

func buildLiteral(forms [][]byte) *literalIndex {
	if len(forms) == 0 {
		return nil
	}
	ix := &literalIndex{forms: forms, window: maxWindow}
	for _, f := range forms {
		ix.window = min(ix.window, len(f))
		ix.maxLen = max(ix.maxLen, len(f))
	}
	w := ix.window
	maxJump := uint8(w - blockLen + 1)
	size := nextPow2(len(forms) * int(maxJump) * 8)
	size = max(1<<10, min(size, 1<<18))
	ix.shift = make([]uint8, size)
	ix.shiftBits = uint(32 - bits.TrailingZeros(uint(size)))
	for i := range ix.shift {
		ix.shift[i] = maxJump
	}
	for _, f := range forms {
		for j := 0; j+blockLen <= w; j++ {
			h := (binary.LittleEndian.Uint32(f[j:]) * hashMul) >> ix.shiftBits
			ix.shift[h] = min(ix.shift[h], uint8(w-blockLen-j))
		}
		ix.short1[f[0]] = true
		k2 := uint(f[0]) | uint(f[1])<<8
		ix.short2[k2/64] |= 1 << (k2 % 64)
		ix.short3 = append(ix.short3, uint32(f[0])|uint32(f[1])<<8|uint32(f[2])<<16)
	}

	slices.Sort(ix.short3)
	ix.short3 = slices.Compact(ix.short3)

	nb := nextPow2(2 * len(forms))
	ix.bucketBits = uint(32 - bits.TrailingZeros(uint(nb)))
	ix.bucketOff = make([]uint32, nb+1)
	keyOf := func(f []byte) (uint32, uint32) {
		k := binary.LittleEndian.Uint32(f)
		return k, (k * hashMul) >> ix.bucketBits
	}
	for _, f := range forms {
		_, b := keyOf(f)
		ix.bucketOff[b+1]++
	}
	for b := 1; b <= nb; b++ {
		ix.bucketOff[b] += ix.bucketOff[b-1]
	}
	ix.entries = make([]bucketEntry, len(forms))
	fill := slices.Clone(ix.bucketOff[:nb])
	for i, f := range forms {
		k, b := keyOf(f)
		ix.entries[fill[b]] = bucketEntry{key: k, form: uint32(i)}
		fill[b]++
	}
	for b := range nb {
		slices.SortFunc(ix.entries[ix.bucketOff[b]:ix.bucketOff[b+1]], func(x, y bucketEntry) int {
			return len(forms[y.form]) - len(forms[x.form])
		})
	}
	return ix
}

func nextPow2(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}
