package hardening

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"testing"
)

const benchChunk = 1 << 20

// providerTokens is a realistic set of token patterns: a dozen prefixes,
// several of them common letter pairs in ordinary text.
var providerTokens = []TokenPattern{
	githubToken,
	{Name: "github-fine", Prefixes: []string{"github_pat_"}, Regexp: regexp.MustCompile(`github_pat_[A-Za-z0-9_]{82}`), MaxLen: 93},
	{Name: "gitlab", Prefixes: []string{"glpat-"}, Regexp: regexp.MustCompile(`glpat-[A-Za-z0-9_-]{20}`), MaxLen: 26},
	{Name: "slack", Prefixes: []string{"xoxb-", "xoxp-"}, Regexp: regexp.MustCompile(`xox[bp]-[0-9A-Za-z-]{10,72}`), MaxLen: 77},
	{Name: "aws-key-id", Prefixes: []string{"AKIA", "ASIA"}, Regexp: regexp.MustCompile(`A[KS]IA[0-9A-Z]{16}`), MaxLen: 20},
	{Name: "stripe", Prefixes: []string{"sk_live_", "rk_live_"}, Regexp: regexp.MustCompile(`[sr]k_live_[0-9A-Za-z]{24,99}`), MaxLen: 107},
	{Name: "npm", Prefixes: []string{"npm_"}, Regexp: regexp.MustCompile(`npm_[A-Za-z0-9]{36}`), MaxLen: 40},
}

func benchScrubber(b *testing.B, secrets int, tokens bool) *Scrubber {
	b.Helper()
	r := rand.New(rand.NewPCG(uint64(secrets), 5))
	s := New()
	if tokens {
		s.AddPatterns(providerTokens...)
	}
	values := make([]string, secrets)
	for i := range values {
		values[i] = randomSecret(r, 16+r.IntN(32))
	}
	s.AddSecrets(values...)
	return s
}

var secretCounts = []int{1, 10, 100, 500}

// BenchmarkMemmove is the floor: copying the chunk once.
func BenchmarkMemmove(b *testing.B) {
	text := ordinaryText(benchChunk, 1)
	dst := make([]byte, len(text))
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		copy(dst, text)
	}
}

func BenchmarkScrub(b *testing.B) {
	text := ordinaryText(benchChunk, 1)
	for _, tokens := range []bool{false, true} {
		for _, n := range secretCounts {
			b.Run(fmt.Sprintf("tokens=%v/secrets=%d", tokens, n), func(b *testing.B) {
				s := benchScrubber(b, n, tokens)
				b.ReportMetric(float64(s.Len()), "forms")
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					s.Scrub(text)
				}
			})
		}
	}
}

// BenchmarkScrubWithHits plants a secret every 64 KiB, so the output is
// rebuilt rather than passed through. Scrub then pays for a fresh 1 MiB
// allocation per call; AppendScrub shows the cost with a reused buffer.
func BenchmarkScrubWithHits(b *testing.B) {
	s := benchScrubber(b, 100, true)
	text := ordinaryText(benchChunk, 1)
	for i := 0; i+100 < len(text); i += 64 << 10 {
		copy(text[i:], s.forms[i%len(s.forms)])
	}
	b.Run("Scrub", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			s.Scrub(text)
		}
	})
	b.Run("AppendScrub", func(b *testing.B) {
		var buf []byte
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			buf = s.AppendScrub(buf[:0], text)
		}
	})
}

func BenchmarkStream(b *testing.B) {
	text := ordinaryText(benchChunk, 1)
	for _, write := range []int{64, 4 << 10, benchChunk} {
		for _, n := range []int{10, 500} {
			for _, tokens := range []bool{false, true} {
				name := fmt.Sprintf("write=%d/secrets=%d/tokens=%v", write, n, tokens)
				b.Run(name, func(b *testing.B) {
					s := benchScrubber(b, n, tokens)
					st := s.Stream(func([]byte) error { return nil })
					b.SetBytes(int64(len(text)))
					for b.Loop() {
						for i := 0; i < len(text); i += write {
							st.Write(text[i:min(len(text), i+write)])
						}
						st.Flush()
					}
				})
			}
		}
	}
}

// BenchmarkAddSecrets measures the copy-on-write rebuild cost.
func BenchmarkAddSecrets(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	values := make([]string, 500)
	for i := range values {
		values[i] = randomSecret(r, 24)
	}
	for b.Loop() {
		New().AddSecrets(values...)
	}
}

// BenchmarkStreamDockerTokens streams engine-sized writes through the token
// set of the docker provider, whose config pattern has a 16 KiB MaxLen, and
// 20 secrets, over log text and over base64 text (where its two-byte
// prefix blocks are common). It reports the bytes a stream keeps.
func BenchmarkStreamDockerTokens(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	s := New(configToken, authField, TokenPattern{
		Name:     "docker-access-token",
		Prefixes: []string{"dckr_pat_", "dckr_oat_"},
		Regexp:   regexp.MustCompile(`dckr_(?:pat|oat)_[A-Za-z0-9_-]{16,100}`),
		MaxLen:   110,
	})
	for range 20 {
		s.AddSecret(randomSecret(r, 24))
	}
	b64 := make([]byte, benchChunk)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := range b64 {
		b64[i] = alphabet[r.IntN(len(alphabet))]
		if i%77 == 76 {
			b64[i] = '\n'
		}
	}
	for _, text := range []struct {
		name string
		data []byte
	}{{"log", ordinaryText(benchChunk, 1)}, {"base64", b64}} {
		for _, write := range []int{64, 20000} {
			b.Run(fmt.Sprintf("text=%s/write=%d", text.name, write), func(b *testing.B) {
				st := s.Stream(func([]byte) error { return nil })
				b.SetBytes(int64(len(text.data)))
				held := 0
				for b.Loop() {
					for i := 0; i < len(text.data); i += write {
						st.Write(text.data[i:min(len(text.data), i+write)])
						held = max(held, cap(st.pending))
					}
					st.Flush()
				}
				b.ReportMetric(float64(held), "held-cap-B")
			})
		}
	}
}
