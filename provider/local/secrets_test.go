package local_test

import (
	"strings"
	"testing"

	"github.com/resident-dev/resident/hardening"
)

// TestTokenPatternsScrub: the patterns are valid for the scrubber and
// catch each token shape, while leaving look-alikes that are not tokens.
func TestTokenPatternsScrub(t *testing.T) {
	p := open(t, t.TempDir())
	s := hardening.New(p.Secrets().Tokens...)
	for _, token := range []string{
		"ghp_" + strings.Repeat("a1B2", 9),
		"github_pat_" + strings.Repeat("x", 22) + "_" + strings.Repeat("Y9", 20),
		"glpat-" + strings.Repeat("z", 20),
		"AKIA" + strings.Repeat("Q7", 8),
	} {
		if got := s.ScrubString("token=" + token + " end"); strings.Contains(got, token) {
			t.Errorf("%s survived: %q", token[:6], got)
		}
	}
	for _, plain := range []string{"ghp_short", "AKIA lowercase", "glpat-"} {
		if got := s.ScrubString(plain); got != plain {
			t.Errorf("%q was changed to %q", plain, got)
		}
	}
}
