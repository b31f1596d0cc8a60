package hardening

import (
	"bytes"
	"regexp"
	"slices"
	"sync"
	"testing"
)

// githubToken is the token pattern the tests use.
var githubToken = TokenPattern{
	Name:     "github-token",
	Prefixes: []string{"ghp_", "gho_"},
	Regexp:   regexp.MustCompile(`gh[po]_[A-Za-z0-9]{36}`),
	MaxLen:   40,
}

// streamChunks writes chunks through a Stream and returns what it emitted.
func streamChunks(t testing.TB, s *Scrubber, chunks [][]byte) []byte {
	t.Helper()
	var out []byte
	st := s.Stream(func(b []byte) error {
		out = append(out, b...)
		return nil
	})
	for _, c := range chunks {
		if n, err := st.Write(c); n != len(c) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	if st.Buffered() != 0 {
		t.Fatalf("Flush left %d bytes", st.Buffered())
	}
	return out
}

// splitAt cuts b at the given increasing positions.
func splitAt(b []byte, at ...int) [][]byte {
	var out [][]byte
	prev := 0
	for _, a := range at {
		out = append(out, b[prev:a])
		prev = a
	}
	return append(out, b[prev:])
}

func bytewise(b []byte) [][]byte {
	out := make([][]byte, len(b))
	for i := range b {
		out[i] = b[i : i+1]
	}
	return out
}

// writeModes are the two ways every table runs: one write and one byte per
// write, as the replacer in the Buildkite agent tests do.
var writeModes = []struct {
	name  string
	split func([]byte) [][]byte
}{
	{"one-write", func(b []byte) [][]byte { return [][]byte{b} }},
	{"byte-per-write", bytewise},
}

// naiveScrub is the specification written as plainly as possible: at every
// position take the longest form or token match, merge overlapping matches,
// replace each merged range by Mask.
func naiveScrub(s *Scrubber, data []byte) []byte {
	var spans []span
	byFirst := map[byte][][]byte{}
	for _, f := range s.forms {
		byFirst[f[0]] = append(byFirst[f[0]], f)
	}
	for i := range data {
		best := 0
		for _, f := range byFirst[data[i]] {
			if len(f) > best && bytes.HasPrefix(data[i:], f) {
				best = len(f)
			}
		}
		for _, p := range s.patterns {
			for _, pre := range p.Prefixes {
				if !bytes.HasPrefix(data[i:], []byte(pre)) {
					continue
				}
				re := anchored(p.Regexp)
				if loc := re.FindIndex(data[i:min(len(data), i+p.MaxLen)]); loc != nil {
					best = max(best, loc[1])
				}
			}
		}
		if best == 0 {
			continue
		}
		if k := len(spans) - 1; k >= 0 && i < spans[k].end {
			spans[k].end = max(spans[k].end, i+best)
		} else {
			spans = append(spans, span{i, i + best})
		}
	}
	return render(nil, data, spans, false)
}

var anchoredCache sync.Map // *regexp.Regexp -> anchored copy

func anchored(re *regexp.Regexp) *regexp.Regexp {
	if a, ok := anchoredCache.Load(re); ok {
		return a.(*regexp.Regexp)
	}
	a := regexp.MustCompile(`^(?:` + re.String() + `)`)
	anchoredCache.Store(re, a)
	return a
}

// survivingForm returns a registered form still visible in out, if any.
// Masks are cut out first, since a form may happen to be part of Mask.
func survivingForm(s *Scrubber, out []byte) []byte {
	clean := bytes.ReplaceAll(out, []byte(Mask), []byte{0})
	for _, f := range s.forms {
		if bytes.Contains(clean, f) {
			return f
		}
	}
	return nil
}

func formsContain(s *Scrubber, want string) bool {
	return slices.ContainsFunc(s.forms, func(f []byte) bool { return string(f) == want })
}
