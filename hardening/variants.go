package hardening

import "strings"

// registrable reports whether v carries enough non-space bytes to be worth
// masking. Shorter values would mask ordinary words and digits all over the
// output, and they also bound how far the matcher's window can skip.
func registrable(v string) bool {
	return len(strings.TrimSpace(v)) >= MinSecretLen
}

// formsOf returns every literal form under which value is masked, or nil if
// value is degenerate: each variant of the value (below) spelled by every row
// of the form table, then each of those as the nesting rows spell it.
//
// Multi-line values (PEM keys) are registered whole, with LF and CRLF line
// endings and without the trailing newline that shells and templates like to
// drop, and line by line, because a tool that prints the key often reflows
// or prefixes it.
func formsOf(value string) []string {
	if !registrable(value) {
		return nil
	}
	set := make(map[string]struct{})
	if !strings.ContainsAny(value, "\r\n") {
		spellAll(set, value)
		if t := strings.TrimSpace(value); t != value {
			spellAll(set, t)
		}
		return nestAll(set)
	}
	// The value as given first: with mixed line endings it is neither its
	// LF nor its CRLF spelling.
	spellAll(set, value)
	lf := strings.ReplaceAll(value, "\r\n", "\n")
	trimmed := strings.TrimRight(lf, "\n")
	for _, whole := range []string{lf, trimmed} {
		spellAll(set, whole)
		spellAll(set, strings.ReplaceAll(whole, "\n", "\r\n"))
	}
	for line := range strings.SplitSeq(lf, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if registrable(line) {
			spellAll(set, line)
			spellAll(set, strings.TrimSpace(line))
		}
	}
	return nestAll(set)
}
