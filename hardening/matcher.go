package hardening

// matcher is one immutable snapshot of everything a Scrubber masks. Scrub and
// Stream load the current snapshot once per call and never lock.
type matcher struct {
	lit *literalIndex // nil when no secrets are registered
	tok *tokenIndex   // nil when no token patterns are registered
}

// scratch holds the slices a scan appends to, so a Stream can reuse them.
type scratch struct {
	lit, tok, merged []span
}

// find returns the disjoint, sorted spans to mask in data[:cut], and cut: the
// length of the prefix of data whose scrubbed form no later byte can change.
// Every match starting before cut is final (no longer form can still appear
// at its start) and ends at or before cut; anything from cut on waits for
// more data. When final, cut is len(data).
//
// Overlapping matches are merged into one span so that a secret nested in or
// overlapping another leaves no fragment; spans that merely touch are kept
// apart, so the rule does not depend on bytes outside either match.
func (m *matcher) find(data []byte, final bool, sc *scratch) ([]span, int) {
	cut := len(data)
	tok, lit := sc.tok[:0], sc.lit[:0]
	if m.tok != nil {
		tok, cut = m.tok.scan(data, final, tok)
	}
	if m.lit != nil {
		var litCut int
		lit, litCut = m.lit.scan(data, cut, final, lit)
		cut = min(cut, litCut)
	}
	sc.tok, sc.lit = tok, lit
	if len(tok) == 0 && len(lit) == 0 {
		return nil, cut
	}
	merged := sc.merged[:0]
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
	// A mask reaching past cut could still grow by merging with a match
	// that starts in the held-back bytes: hold the whole span back.
	if k := len(merged) - 1; k >= 0 && merged[k].end > cut {
		cut = merged[k].start
		merged = merged[:k]
	}
	sc.merged = merged
	return merged, cut
}

// render appends data with every span replaced by Mask.
func render(dst, data []byte, spans []span) []byte {
	prev := 0
	for _, sp := range spans {
		dst = append(dst, data[prev:sp.start]...)
		dst = append(dst, Mask...)
		prev = sp.end
	}
	return append(dst, data[prev:]...)
}
