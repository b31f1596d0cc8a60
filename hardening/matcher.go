package hardening

// matcher is one immutable snapshot of everything a Scrubber masks. Scrub and
// Stream load the current snapshot once per call and never lock.
type matcher struct {
	lit *literalIndex // nil when no secrets are registered
	tok *tokenIndex   // nil when no token patterns are registered
}

func newMatcher(lit *literalIndex, tok *tokenIndex) *matcher {
	return &matcher{lit: lit, tok: tok}
}

// scratch holds the slices a scan appends to, so a Stream can reuse them,
// and what a Stream remembers between scans of the same bytes.
type scratch struct {
	lit, tok, merged []span
	lanes            [4][]span
	base             int64 // stream offset of the data being scanned
	wait             tokenWait
	live             liveScratch
}

// find returns the disjoint, sorted spans to mask in data[:cut], cut, and
// open. cut is the length of the prefix of data that no later byte can
// change: every match starting before it is final (no longer form can still
// appear at its start); anything from cut on waits for more data. When
// final, cut is len(data).
//
// A mask may be known to start before cut while its end is not yet known,
// because a match starting at or after cut may still overlap and extend it.
// The last span then ends at cut and open is the number of bytes after cut
// already known to be inside it. The next call on the held-back bytes passes
// that number as carry: those bytes open the data as a continuation of the
// mask already emitted, so a run of overlapping matches yields one Mask, as
// in Scrub, while the stream holds back only what is undecided.
//
// Overlapping matches are merged into one span so that a secret nested in or
// overlapping another leaves no fragment; spans that merely touch are kept
// apart, so the rule does not depend on bytes outside either match.
func (m *matcher) find(data []byte, final bool, carry int, sc *scratch) (spans []span, cut, open int) {
	cut = len(data)
	tok, lit := sc.tok[:0], sc.lit[:0]
	if m.tok != nil {
		tok, cut = m.tok.scan(data, final, tok, sc)
	}
	if m.lit != nil {
		var litCut int
		lit, litCut = m.lit.scan(data, cut, final, lit, &sc.lanes)
		cut = min(cut, litCut)
	}
	sc.tok, sc.lit = tok, lit
	if len(tok) == 0 && len(lit) == 0 && carry == 0 {
		return nil, cut, 0
	}
	merged := sc.merged[:0]
	if carry > 0 {
		merged = append(merged, span{0, carry})
	}
	for i, j := 0, 0; i < len(lit) || j < len(tok); {
		var next span
		if j >= len(tok) || (i < len(lit) && lit[i].start <= tok[j].start) {
			next, i = lit[i], i+1
		} else {
			next, j = tok[j], j+1
		}
		if next.start >= cut {
			continue
		}
		if k := len(merged) - 1; k >= 0 && next.start < merged[k].end {
			merged[k].end = max(merged[k].end, next.end)
			continue
		}
		merged = append(merged, next)
	}
	if k := len(merged) - 1; k >= 0 && merged[k].end > cut {
		open = merged[k].end - cut
		merged[k].end = cut
	}
	sc.merged = merged
	return merged, cut, open
}

// render appends data with every span replaced by Mask, except a leading
// span that continues a mask already emitted (cont), which is dropped.
func render(dst, data []byte, spans []span, cont bool) []byte {
	prev := 0
	for i, sp := range spans {
		dst = append(dst, data[prev:sp.start]...)
		if i > 0 || !cont {
			dst = append(dst, Mask...)
		}
		prev = sp.end
	}
	return append(dst, data[prev:]...)
}

func clearLanes(lanes *[4][]span) {
	for k := range lanes {
		lanes[k] = lanes[k][:0]
	}
}

// appendLanes appends the lanes' matches in order: lane k covers the k-th
// quarter of the range, so concatenation keeps start order.
func appendLanes(out []span, lanes *[4][]span) []span {
	for _, l := range lanes {
		out = append(out, l...)
	}
	return out
}
