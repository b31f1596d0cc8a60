package external

import (
	"regexp"
	"testing"

	"github.com/resident-dev/resident/provider/external/wire"
)

// FuzzPolicyOf: a provider's token patterns come from another program, so
// turning them into scrubber patterns must never panic, and what it accepts
// must bound every match it can make.
func FuzzPolicyOf(f *testing.F) {
	for _, seed := range []string{`ghp_[A-Za-z0-9]{36}`, `dckr_(?:pat|oat)_[A-Za-z0-9_-]{16,100}`, `sk-[a-z]+`, `(a|bb)c{2,5}`, `x*`, `ab(`, `\p{Greek}{3}zz`, `ab$`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		policy, err := policyOf(wire.Secrets{TokenPatterns: []wire.TokenPattern{{Name: "fuzz", Regexp: expr}}})
		if err != nil {
			return
		}
		tok := policy.Tokens[0]
		if tok.MaxLen <= 0 || len(tok.Prefixes) == 0 || len(tok.Prefixes[0]) < 2 {
			t.Fatalf("accepted %q with prefixes %q and max_len %d", expr, tok.Prefixes, tok.MaxLen)
		}
		re := regexp.MustCompile(expr)
		if m := re.FindString(tok.Prefixes[0] + "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"); len(m) > tok.MaxLen {
			t.Fatalf("%q matched %d bytes, past its max_len %d", expr, len(m), tok.MaxLen)
		}
	})
}

func TestPolicyOfDerivesPrefixAndLength(t *testing.T) {
	policy, err := policyOf(wire.Secrets{TokenPatterns: []wire.TokenPattern{{Name: "gh", Regexp: `ghp_[A-Za-z0-9]{36}`}}})
	if err != nil {
		t.Fatal(err)
	}
	if tok := policy.Tokens[0]; tok.Prefixes[0] != "ghp_" || tok.MaxLen != 40 {
		t.Fatalf("derived %q, %d; want ghp_, 40", tok.Prefixes, tok.MaxLen)
	}
	for _, bad := range []string{`x*`, `[a-z]{3}`, `ab(`, `tok_.+`} {
		if _, err := policyOf(wire.Secrets{TokenPatterns: []wire.TokenPattern{{Name: "bad", Regexp: bad}}}); err == nil {
			t.Errorf("pattern %q was accepted; it has no literal prefix or no bound", bad)
		}
	}
}
