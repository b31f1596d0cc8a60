package hardening

import (
	"regexp"
	"strings"
	"testing"
)

func TestInvalidPatternPanics(t *testing.T) {
	re := regexp.MustCompile(`x`)
	for _, p := range []TokenPattern{
		{Name: "no regexp", Prefixes: []string{"ab"}, MaxLen: 4},
		{Name: "no prefixes", Regexp: re, MaxLen: 4},
		{Name: "short prefix", Prefixes: []string{"a"}, Regexp: re, MaxLen: 4},
		{Name: "prefix over MaxLen", Prefixes: []string{"abcdef"}, Regexp: re, MaxLen: 4},
		{Name: "no MaxLen", Prefixes: []string{"ab"}, Regexp: re},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", p.Name)
				}
			}()
			New(p)
		}()
	}
}

// TestTokenTable covers prefix sharing, MaxLen truncation, regex flags and
// the choice of the longest rule at a hit.
func TestTokenTable(t *testing.T) {
	s := New(
		githubToken,
		TokenPattern{Name: "gitlab", Prefixes: []string{"glpat-"}, Regexp: regexp.MustCompile(`glpat-[A-Za-z0-9_-]{20}`), MaxLen: 26},
		TokenPattern{Name: "short-gh", Prefixes: []string{"ghp_"}, Regexp: regexp.MustCompile(`ghp_x{4}`), MaxLen: 8},
		TokenPattern{Name: "case", Prefixes: []string{"SK-", "sk-"}, Regexp: regexp.MustCompile(`(?i)sk-[a-z0-9]{8,}`), MaxLen: 24},
	)
	long := strings.Repeat("a", 30)
	for _, tc := range []struct{ in, want string }{
		{"glpat-abcdefghij0123456789 x", "[REDACTED] x"},
		{"glpat-abcdefghij012345678", "glpat-abcdefghij012345678"},
		{"ghp_xxxxyy", "[REDACTED]yy"},
		{"ghp_xxxx0123456789abcdefghijABCDEFGHIJ01", "[REDACTED]"},
		{"key=sk-AbCd1234!", "key=[REDACTED]!"},
		{"key=SK-" + long, "key=[REDACTED]" + strings.Repeat("a", 9)}, // MaxLen caps the match
		{"sk-abc", "sk-abc"},
	} {
		if got := s.ScrubString(tc.in); got != tc.want {
			t.Errorf("Scrub(%q) = %q, want %q", tc.in, got, tc.want)
		}
		for _, mode := range writeModes {
			if got := streamChunks(t, s, mode.split([]byte(tc.in))); string(got) != tc.want {
				t.Errorf("%s: stream(%q) = %q, want %q", mode.name, tc.in, got, tc.want)
			}
		}
	}
}

func TestScrubStringCleanDoesNotAllocate(t *testing.T) {
	s := New(githubToken)
	s.AddSecret("hunter22")
	in := strings.Repeat("nothing to see here ", 100)
	if n := testing.AllocsPerRun(100, func() { s.ScrubString(in) }); n != 0 {
		t.Fatalf("ScrubString of clean text allocates %v times", n)
	}
}
