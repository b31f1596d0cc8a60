package hardening

import "bytes"

// scan appends every token match to out in start order and returns the
// earliest position whose outcome still depends on bytes not yet seen: a hit
// with fewer than its MaxLen of bytes after it, or a prefix cut off by the
// end of data. Nothing at or after that position is reported. When final,
// that position is len(data).
func (tx *tokenIndex) scan(data []byte, final bool, out []span, sc *scratch) ([]span, int) {
	n, w := len(data), tx.window
	from := 0
	if bulk := n - tx.need + 1; bulk >= laneMin {
		// Every hit below bulk is decidable: see literalIndex.scan.
		clearLanes(&sc.lanes)
		tx.scanLanes(data, bulk, &sc.lanes)
		out = appendLanes(out, &sc.lanes)
		from = bulk
	}
	shift := tx.shift[:pairTable]
	for i := from + w - 1; i < n; {
		if d := shift[pairSlot(data[i-1], data[i])]; d != 0 {
			i += int(d)
			continue
		}
		s := i - w + 1
		best, wait := tx.matchAt(data, s, final, sc)
		if wait {
			return out, s
		}
		if best > 0 {
			out = append(out, span{s, s + best})
		}
		i++
	}
	if !final {
		// Fewer than window bytes remain: no prefix fits, one may begin.
		for s := max(0, n-w+1); s < n; s++ {
			if !tx.first[data[s]] {
				continue
			}
			for k := range tx.prefixes {
				if bytes.HasPrefix(tx.prefixes[k].lit, data[s:]) {
					return out, s
				}
			}
		}
	}
	return out, n
}

// scanLanes is literalIndex.scanLanes for prefixes.
func (tx *tokenIndex) scanLanes(data []byte, end int, lanes *[4][]span) {
	w := tx.window
	shift := tx.shift[:pairTable]
	q := end / 4
	i0, i1, i2, i3 := w-1, q+w-1, 2*q+w-1, 3*q+w-1
	e0, e1, e2, e3 := i1, i2, i3, end+w-1
	for i0 < e0 && i1 < e1 && i2 < e2 && i3 < e3 {
		d0 := shift[pairSlot(data[i0-1], data[i0])]
		d1 := shift[pairSlot(data[i1-1], data[i1])]
		d2 := shift[pairSlot(data[i2-1], data[i2])]
		d3 := shift[pairSlot(data[i3-1], data[i3])]
		if d0 == 0 || d1 == 0 || d2 == 0 || d3 == 0 {
			lanes[0], d0 = tx.collect(data, i0, d0, lanes[0])
			lanes[1], d1 = tx.collect(data, i1, d1, lanes[1])
			lanes[2], d2 = tx.collect(data, i2, d2, lanes[2])
			lanes[3], d3 = tx.collect(data, i3, d3, lanes[3])
		}
		i0, i1, i2, i3 = i0+int(d0), i1+int(d1), i2+int(d2), i3+int(d3)
	}
	lanes[0] = tx.scanEnds(data, i0, e0, lanes[0])
	lanes[1] = tx.scanEnds(data, i1, e1, lanes[1])
	lanes[2] = tx.scanEnds(data, i2, e2, lanes[2])
	lanes[3] = tx.scanEnds(data, i3, e3, lanes[3])
}

// collect is literalIndex.collect for prefixes.
func (tx *tokenIndex) collect(data []byte, i int, d uint8, out []span) ([]span, uint8) {
	if d != 0 {
		return out, d
	}
	s := i - tx.window + 1
	if best, _ := tx.matchAt(data, s, true, nil); best > 0 {
		out = append(out, span{s, s + best})
	}
	return out, 1
}

// scanEnds finishes one lane of scanLanes: windows ending at [i, end).
func (tx *tokenIndex) scanEnds(data []byte, i, end int, out []span) []span {
	shift := tx.shift[:pairTable]
	for i < end {
		d := shift[pairSlot(data[i-1], data[i])]
		out, d = tx.collect(data, i, d, out)
		i += int(d)
	}
	return out
}

// matchAt returns the length of the longest token match starting at s, or
// wait if a prefix occurs (or may occur) at s but its regex cannot be decided
// on the bytes available. sc may be nil when final.
func (tx *tokenIndex) matchAt(data []byte, s int, final bool, sc *scratch) (best int, wait bool) {
	rest := data[s:]
	for k := range tx.prefixes {
		tp := &tx.prefixes[k]
		if tp.lit[0] != rest[0] {
			continue
		}
		if len(rest) < len(tp.lit) {
			if !final && bytes.HasPrefix(tp.lit, rest) {
				return 0, true
			}
			continue
		}
		if !bytes.HasPrefix(rest, tp.lit) {
			continue
		}
		if !final && len(rest) < tp.need && tx.undecided(tp, rest, s, sc) {
			return 0, true
		}
		for _, r := range tp.rules {
			if loc := r.re.FindIndex(rest[:min(len(rest), r.maxLen)]); loc != nil {
				best = max(best, loc[1])
			}
		}
	}
	return best, false
}

// tokenWait remembers the hit a stream is waiting on: the same bytes are
// scanned again with every write until the hit is decided.
type tokenWait struct {
	tx  *tokenIndex
	at  int64 // stream offset of the hit
	len int   // bytes from the hit that were found undecided
}

// undecided reports whether some rule of tp may still match differently at
// the hit s once more bytes arrive. A hit that stays undecided (a long token
// arriving in small writes) is simulated again only when its bytes have
// doubled since the last look, so the work stays linear in the token's
// length; in between it is held back, as it would be anyway.
func (tx *tokenIndex) undecided(tp *tokenPrefix, rest []byte, s int, sc *scratch) bool {
	at := sc.base + int64(s)
	if w := sc.wait; w.tx == tx && w.at == at && len(rest) < 2*w.len {
		return true
	}
	for _, r := range tp.rules {
		if len(rest) < r.maxLen && r.live().undecided(rest, &sc.live) {
			sc.wait = tokenWait{tx: tx, at: at, len: len(rest)}
			return true
		}
	}
	return false
}
