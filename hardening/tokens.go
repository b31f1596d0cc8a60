package hardening

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
)

// TokenPattern is a provider's token regex with a literal prefilter: the
// regex only runs where one of Prefixes occurs, so a pattern costs one
// substring search per prefix plus a regex run per hit, not a regex run over
// the whole output.
type TokenPattern struct {
	Name     string         // e.g. "github-token"
	Prefixes []string       // literal strings every match starts with (e.g. "ghp_", "glpat-"); required, non-empty
	Regexp   *regexp.Regexp // must match starting at a prefix occurrence
	MaxLen   int            // longest possible match in bytes; bounds how much a stream holds back
}

func (p TokenPattern) validate() error {
	if p.Regexp == nil || p.MaxLen <= 0 || len(p.Prefixes) == 0 {
		return fmt.Errorf("hardening: token pattern %q needs a Regexp, Prefixes and a positive MaxLen", p.Name)
	}
	for _, pre := range p.Prefixes {
		if pre == "" || len(pre) > p.MaxLen {
			return fmt.Errorf("hardening: token pattern %q: prefix %q is empty or longer than MaxLen", p.Name, pre)
		}
	}
	return nil
}

// tokenRule is one pattern as run at a prefix hit. The regex is re-compiled
// anchored so that it cannot wander past the hit to a later match; it only
// ever sees data[hit:hit+maxLen], so its result does not depend on how a
// stream was split, and a stream knows exactly when it may stop waiting.
type tokenRule struct {
	re     *regexp.Regexp
	maxLen int
}

type tokenPrefix struct {
	lit    []byte
	rules  []tokenRule
	window int // largest maxLen among rules: bytes needed after a hit to decide it
}

type tokenIndex struct {
	prefixes []tokenPrefix
}

func buildTokens(patterns []TokenPattern) *tokenIndex {
	if len(patterns) == 0 {
		return nil
	}
	byLit := map[string]int{}
	tx := &tokenIndex{}
	for _, p := range patterns {
		rule := tokenRule{re: regexp.MustCompile(`^(?:` + p.Regexp.String() + `)`), maxLen: p.MaxLen}
		for _, pre := range p.Prefixes {
			i, ok := byLit[pre]
			if !ok {
				i = len(tx.prefixes)
				byLit[pre] = i
				tx.prefixes = append(tx.prefixes, tokenPrefix{lit: []byte(pre)})
			}
			tp := &tx.prefixes[i]
			tp.rules = append(tp.rules, rule)
			tp.window = max(tp.window, p.MaxLen)
		}
	}
	return tx
}

// scan appends every token match to out, sorted by start, and returns the
// earliest position whose outcome still depends on bytes not yet seen: a hit
// with fewer than window bytes after it, or a prefix cut off by the end of
// data. When final, that position is len(data).
func (tx *tokenIndex) scan(data []byte, final bool, out []span) ([]span, int) {
	n, hold := len(data), len(data)
	first := len(out)
	for i := range tx.prefixes {
		tp := &tx.prefixes[i]
		for from := 0; ; {
			j := bytes.Index(data[from:], tp.lit)
			if j < 0 {
				break
			}
			pos := from + j
			if !final && pos+tp.window > n {
				hold = min(hold, pos)
				break
			}
			best := 0
			for _, r := range tp.rules {
				if loc := r.re.FindIndex(data[pos:min(n, pos+r.maxLen)]); loc != nil {
					best = max(best, loc[1])
				}
			}
			if best > 0 {
				out = append(out, span{pos, pos + best})
			}
			from = pos + 1
		}
		if !final {
			for r := min(len(tp.lit)-1, n); r > 0; r-- {
				if bytes.Equal(data[n-r:], tp.lit[:r]) {
					hold = min(hold, n-r)
					break
				}
			}
		}
	}
	if len(tx.prefixes) > 1 {
		slices.SortFunc(out[first:], func(a, b span) int { return a.start - b.start })
	}
	return out, hold
}
