package external

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/wire"
)

// maxDerivedLen bounds a derived token length: a pattern that could match
// more is refused rather than held back for without end.
const maxDerivedLen = 4096

// policyOf turns the provider's announced secrets into the scrubber's
// patterns, deriving literal prefixes and the longest match when the
// provider left them out; a pattern that cannot be bounded is refused.
func policyOf(s wire.Secrets) (provider.SecretPolicy, error) {
	out := provider.SecretPolicy{EnvPrefixes: append([]string{}, s.EnvPrefixes...)}
	for _, t := range s.TokenPatterns {
		re, err := regexp.Compile(t.Regexp)
		if err != nil {
			return out, fmt.Errorf("token pattern %q is not RE2 syntax: %v", t.Name, err)
		}
		pat := hardening.TokenPattern{Name: t.Name, Regexp: re, Prefixes: t.Prefixes, MaxLen: t.MaxLen}
		if len(pat.Prefixes) == 0 {
			prefix, _ := re.LiteralPrefix()
			if len(prefix) < 2 {
				return out, fmt.Errorf("token pattern %q has no literal prefix of 2 or more bytes; announce its prefixes", t.Name)
			}
			pat.Prefixes = []string{prefix}
		}
		if pat.MaxLen == 0 {
			n, err := longestMatch(t.Regexp)
			if err != nil {
				return out, fmt.Errorf("token pattern %q: %v; announce max_len", t.Name, err)
			}
			pat.MaxLen = n
		}
		out.Tokens = append(out.Tokens, pat)
	}
	return out, nil
}

// longestMatch is the most bytes expr can match, or an error when it is
// unbounded (a star, a plus or an open repeat).
func longestMatch(expr string) (int, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return 0, err
	}
	n, ok := maxLen(re.Simplify())
	if !ok || n > maxDerivedLen {
		return 0, fmt.Errorf("it can match without bound")
	}
	return n, nil
}

func maxLen(re *syntax.Regexp) (int, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpNoMatch:
		return 0, true
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			n += utf8.RuneLen(r)
		}
		return n, true
	case syntax.OpCharClass:
		widest := 1
		for i := 1; i < len(re.Rune); i += 2 {
			widest = max(widest, utf8.RuneLen(re.Rune[i]))
		}
		return widest, true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax, true
	case syntax.OpCapture:
		return maxLen(re.Sub[0])
	case syntax.OpQuest:
		return maxLen(re.Sub[0])
	case syntax.OpRepeat:
		if re.Max < 0 {
			return 0, false
		}
		n, ok := maxLen(re.Sub[0])
		return n * re.Max, ok
	case syntax.OpConcat:
		total := 0
		for _, sub := range re.Sub {
			n, ok := maxLen(sub)
			if !ok {
				return 0, false
			}
			total += n
		}
		return total, true
	case syntax.OpAlternate:
		widest := 0
		for _, sub := range re.Sub {
			n, ok := maxLen(sub)
			if !ok {
				return 0, false
			}
			widest = max(widest, n)
		}
		return widest, true
	}
	return 0, false // star, plus
}
