package hardening

import (
	"encoding/json"
	"fmt"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"
)

// maxDerivedLen bounds a derived token length: a pattern that could match
// more is refused rather than held back for without end.
const maxDerivedLen = 4096

// CompileTokenPattern builds a pattern from its source text, as a pattern
// that travels as data (a provider's announced policy, a SecretPolicy read
// from JSON) arrives: expr is RE2 syntax; empty prefixes are derived from
// its literal prefix, and a zero maxLen from the longest match it can make.
// A pattern with no literal prefix of 2 or more bytes and none given, or one
// that can match without bound and no maxLen given, is refused.
func CompileTokenPattern(name, expr string, prefixes []string, maxLen int) (TokenPattern, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return TokenPattern{}, fmt.Errorf("token pattern %q is not RE2 syntax: %v", name, err)
	}
	pat := TokenPattern{Name: name, Regexp: re, Prefixes: prefixes, MaxLen: maxLen}
	if len(pat.Prefixes) == 0 {
		prefix, _ := re.LiteralPrefix()
		if len(prefix) < 2 {
			return TokenPattern{}, fmt.Errorf("token pattern %q has no literal prefix of 2 or more bytes; give its prefixes", name)
		}
		pat.Prefixes = []string{prefix}
	}
	if pat.MaxLen == 0 {
		n, err := longestMatch(expr)
		if err != nil {
			return TokenPattern{}, fmt.Errorf("token pattern %q: %v; give its max_len", name, err)
		}
		pat.MaxLen = n
	}
	if err := pat.validate(); err != nil {
		return TokenPattern{}, err
	}
	return pat, nil
}

// Source is the pattern's RE2 source text.
func (p TokenPattern) Source() string {
	if p.Regexp == nil {
		return ""
	}
	return p.Regexp.String()
}

// tokenPatternJSON is a pattern as data: the compiled regexp travels as its
// source text.
type tokenPatternJSON struct {
	Name     string   `json:"name"`
	Regexp   string   `json:"regexp"`
	Prefixes []string `json:"prefixes,omitempty"`
	MaxLen   int      `json:"max_len,omitempty"`
}

// MarshalJSON writes the pattern with its regexp as source text.
func (p TokenPattern) MarshalJSON() ([]byte, error) {
	return json.Marshal(tokenPatternJSON{Name: p.Name, Regexp: p.Source(), Prefixes: p.Prefixes, MaxLen: p.MaxLen})
}

// UnmarshalJSON compiles a pattern written by MarshalJSON (or by hand, with
// prefixes and max_len left to CompileTokenPattern to derive).
func (p *TokenPattern) UnmarshalJSON(data []byte) error {
	var raw tokenPatternJSON
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	pat, err := CompileTokenPattern(raw.Name, raw.Regexp, raw.Prefixes, raw.MaxLen)
	if err != nil {
		return err
	}
	*p = pat
	return nil
}

// longestMatch is the most bytes expr can match, or an error when it is
// unbounded (a star, a plus or an open repeat).
func longestMatch(expr string) (int, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return 0, err
	}
	n, ok := maxMatchLen(re.Simplify())
	if !ok || n > maxDerivedLen {
		return 0, fmt.Errorf("it can match without bound")
	}
	return n, nil
}
func maxMatchLen(re *syntax.Regexp) (int, bool) {
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
		return maxMatchLen(re.Sub[0])
	case syntax.OpQuest:
		return maxMatchLen(re.Sub[0])
	case syntax.OpRepeat:
		if re.Max < 0 {
			return 0, false
		}
		n, ok := maxMatchLen(re.Sub[0])
		return n * re.Max, ok
	case syntax.OpConcat:
		total := 0
		for _, sub := range re.Sub {
			n, ok := maxMatchLen(sub)
			if !ok {
				return 0, false
			}
			total += n
		}
		return total, true
	case syntax.OpAlternate:
		widest := 0
		for _, sub := range re.Sub {
			n, ok := maxMatchLen(sub)
			if !ok {
				return 0, false
			}
			widest = max(widest, n)
		}
		return widest, true
	}
	return 0, false // star, plus
}
