package hardening

import (
	"fmt"
	"regexp"
	"sync"
)

// TokenPattern is a provider's token regex with a literal prefilter: the
// regex only runs where one of Prefixes occurs (all prefixes of all patterns
// are found in one pass), never over the whole output. Prefixes must be at
// least 2 bytes; longer, rarer prefixes make the pass faster.
type TokenPattern struct {
	Name     string         // e.g. "github-token"
	Prefixes []string       // literal strings every match starts with (e.g. "ghp_", "glpat-"); required, non-empty
	Regexp   *regexp.Regexp // must match starting at a prefix occurrence
	MaxLen   int            // longest possible match in bytes; bounds how much a stream holds back for a token still arriving
}

func (p TokenPattern) validate() error {
	if p.Regexp == nil || p.MaxLen <= 0 || len(p.Prefixes) == 0 {
		return fmt.Errorf("hardening: token pattern %q needs a Regexp, Prefixes and a positive MaxLen", p.Name)
	}
	for _, pre := range p.Prefixes {
		if len(pre) < 2 || len(pre) > p.MaxLen {
			return fmt.Errorf("hardening: token pattern %q: prefix %q is shorter than 2 bytes or longer than MaxLen", p.Name, pre)
		}
	}
	return nil
}

// tokenRule is one pattern as run at a prefix hit. The regex is re-compiled
// anchored so that it cannot wander past the hit to a later match; it only
// ever sees data[hit:hit+maxLen], so its result does not depend on how a
// stream was split, and a stream knows exactly when it may stop waiting.
type tokenRule struct {
	re *regexp.Regexp
	// live is the same regex as an automaton, asked whether a hit is
	// decided before MaxLen bytes follow it; compiled on a stream's first
	// undecided hit, so that adding patterns (at every session start) and
	// Scrub do not pay for it.
	live   func() liveProg
	maxLen int
}

type tokenPrefix struct {
	lit   []byte
	rules []tokenRule
	need  int // largest maxLen among rules: bytes needed after a hit to decide it
}

// tokenIndex finds prefix occurrences in one pass with the same skipping
// idea as the literal index, on two-byte blocks because prefixes are short:
// a window as long as the shortest prefix jumps by up to window-1 bytes.
// One pass over all prefixes beats a bytes.Index per prefix, whose per-call
// overhead dominates when a prefix starts with a common letter.
type tokenIndex struct {
	prefixes []tokenPrefix
	window   int       // shortest prefix, capped at maxWindow
	need     int       // bytes after a hit that decide every rule
	first    [256]bool // first byte of some prefix
	shift    []uint8   // pairTable entries, indexed by pairSlot of the window's last two bytes
}

func buildTokens(patterns []TokenPattern) *tokenIndex {
	if len(patterns) == 0 {
		return nil
	}
	byLit := map[string]int{}
	tx := &tokenIndex{}
	for _, p := range patterns {
		expr := `^(?:` + p.Regexp.String() + `)`
		rule := tokenRule{re: regexp.MustCompile(expr), live: sync.OnceValue(func() liveProg { return compileLive(expr) }), maxLen: p.MaxLen}
		for _, pre := range p.Prefixes {
			i, ok := byLit[pre]
			if !ok {
				i = len(tx.prefixes)
				byLit[pre] = i
				tx.prefixes = append(tx.prefixes, tokenPrefix{lit: []byte(pre)})
			}
			tp := &tx.prefixes[i]
			tp.rules = append(tp.rules, rule)
			tp.need = max(tp.need, p.MaxLen)
			tx.need = max(tx.need, p.MaxLen)
		}
	}
	tx.window = maxWindow
	for _, tp := range tx.prefixes {
		tx.window = min(tx.window, len(tp.lit))
	}
	tx.shift = make([]uint8, pairTable)
	for i := range tx.shift {
		tx.shift[i] = uint8(tx.window - 1)
	}
	for _, tp := range tx.prefixes {
		tx.first[tp.lit[0]] = true
		for j := 0; j+2 <= tx.window; j++ {
			k := pairSlot(tp.lit[j], tp.lit[j+1])
			tx.shift[k] = min(tx.shift[k], uint8(tx.window-2-j))
		}
	}
	return tx
}

// pairTable is small enough to stay in L1: the scan is bound by the latency
// of one table load per step, and prefixes contribute only a few dozen pairs,
// so hashing 64Ki pairs into 4Ki slots costs almost no extra false hits.
const pairTable = 1 << 12

func pairSlot(a, b byte) uint32 {
	return ((uint32(a) | uint32(b)<<8) * hashMul) >> (32 - 12)
}
