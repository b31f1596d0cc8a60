package hardening

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// richSecret mixes in the characters that give a secret many distinct
// forms: URL and JSON specials, control characters, non-ASCII letters and an
// astral rune (a surrogate pair in ASCII-only JSON).
func richSecret(r *rand.Rand, n int) string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	special := []string{"/", "+", " ", "&", "<", `"`, `\`, "\b", "\f", "ü", "é", "€", "😀"}
	var b []byte
	for len(b) < n {
		if r.IntN(6) == 0 {
			b = append(b, special[r.IntN(len(special))]...)
		} else {
			b = append(b, alnum[r.IntN(len(alnum))])
		}
	}
	return string(b)
}

// BenchmarkScrubRichSecrets is BenchmarkScrub with secrets whose forms do
// not collapse into the raw value, so it shows what each form costs.
func BenchmarkScrubRichSecrets(b *testing.B) {
	text := ordinaryText(benchChunk, 1)
	for _, tokens := range []bool{false, true} {
		for _, n := range []int{10, 100, 500} {
			b.Run(fmt.Sprintf("tokens=%v/secrets=%d", tokens, n), func(b *testing.B) {
				r := rand.New(rand.NewPCG(uint64(n), 9))
				s := New()
				if tokens {
					s.AddPatterns(providerTokens...)
				}
				values := make([]string, n)
				for i := range values {
					values[i] = richSecret(r, 16+r.IntN(32))
				}
				s.AddSecrets(values...)
				b.ReportMetric(float64(s.Len()), "forms")
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					s.Scrub(text)
				}
			})
		}
	}
}

// BenchmarkAddRichSecrets is the rebuild cost for such secrets.
func BenchmarkAddRichSecrets(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	values := make([]string, 500)
	for i := range values {
		values[i] = richSecret(r, 24)
	}
	for b.Loop() {
		New().AddSecrets(values...)
	}
}
