package resident

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// The regexps the name checks replaced: the loops must agree with them on
// every input.
var nameRules = []struct {
	name  string
	re    *regexp.Regexp
	check func(string) bool
}{
	{"install_id", regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`), validInstallID},
	{"tag_prefix", regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$`), validTagPrefix},
	{"tag key", regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$`), validTagKey},
	{"env name", regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,255}$`), validEnvName},
}

func TestNameRulesMatchTheirRegexps(t *testing.T) {
	fixed := []string{"", "a", "A", "0", "_", ".", "-", "/", "_a", "0a", "a0", ".a", "a.", "a/b", "-a", "a-b",
		"desk-7f3a9c", "PATH", "LANG", "9LIVES", "é", "a\n", "\na", "a b", "a\x00",
		strings.Repeat("a", 31), strings.Repeat("a", 32), strings.Repeat("a", 33),
		strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat("a", 127), strings.Repeat("a", 128), strings.Repeat("a", 129),
		strings.Repeat("_", 256), strings.Repeat("_", 257)}
	r := rand.New(rand.NewPCG(7, 9))
	const alphabet = "aZ09._-/ \n\x00é_"
	for range 20000 {
		b := make([]byte, r.IntN(70))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		fixed = append(fixed, string(b))
	}
	for _, rule := range nameRules {
		for _, s := range fixed {
			if got, want := rule.check(s), rule.re.MatchString(s); got != want {
				t.Fatalf("%s %q: loop says %v, regexp %v", rule.name, s, got, want)
			}
		}
	}
}
