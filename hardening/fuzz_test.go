package hardening

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fuzzSecret turns fuzz bytes into a registrable secret. Brackets are
// excluded so that no form can be made up of Mask and its neighbours, which
// would make "no form survives" unfalsifiable for reasons unrelated to the
// scrubber.
func fuzzSecret(raw string) string {
	b := []byte(raw)
	for i, c := range b {
		if c != '\n' && c != '\r' && (c < 0x20 || c > 0x7e) {
			c = 0x20 + c%95
		}
		if c == '[' || c == ']' {
			c = '_'
		}
		b[i] = c
	}
	if !registrable(string(b)) {
		return "fallback-secret"
	}
	return string(b)
}

const fuzzToken = "ghp_0123456789abcdefghijABCDEFGHIJ012345"

// FuzzStreamNoSecretSurvives plants registered forms (and a token) in random
// data, streams it in random pieces, and checks that the stream equals
// Scrub of the whole, that Scrub equals the plain reference, and that no
// registered form is left visible.
func FuzzStreamNoSecretSurvives(f *testing.F) {
	f.Add([]byte("hello world"), "hunter22", "temp4now", []byte{128, 0, 10, 3}, []byte{1})
	f.Add([]byte("a\nb\nc"), "line-one\nline-two", "x\"<y>&z\\w", []byte{0, 5, 255, 7, 40, 2}, []byte{3, 9})
	f.Fuzz(func(t *testing.T, data []byte, s1, s2 string, plants, splits []byte) {
		if len(data) > 1<<12 || len(s1) > 64 || len(s2) > 64 || len(plants) > 32 {
			t.Skip()
		}
		s := New(githubToken)
		s.AddSecrets(fuzzSecret(s1), fuzzSecret(s2))
		in := append([]byte(nil), data...)
		for i := 0; i+1 < len(plants); i += 2 {
			at := int(plants[i]) * (len(in) + 1) / 256
			var form []byte
			if k := int(plants[i+1]); k == 255 {
				form = []byte(fuzzToken)
			} else {
				form = s.forms[k%len(s.forms)]
			}
			in = append(in[:at], append(append([]byte(nil), form...), in[at:]...)...)
		}

		want := s.Scrub(in)
		if ref := naiveScrub(s, in); !bytes.Equal(want, ref) {
			t.Fatalf("Scrub(%q)\n got %q\nwant %q", in, want, ref)
		}
		if form := survivingForm(s, want); form != nil {
			t.Fatalf("form %q survived in %q", form, want)
		}
		if bytes.Contains(want, []byte(fuzzToken)) {
			t.Fatalf("token survived in %q", want)
		}
		chunks := splitWrites(in, splits)
		if got := streamChunks(t, s, chunks); !bytes.Equal(got, want) {
			t.Fatalf("stream of %q\n got %q\nwant %q", chunks, got, want)
		}
	})
}

// FuzzScrubIdempotent checks that Scrub never panics, never modifies its
// input, agrees with ScrubString, and finds nothing left to mask in its own
// output.
func FuzzScrubIdempotent(f *testing.F) {
	f.Add([]byte("pw=hunter22 and aHVudGVyMjI="), "hunter22")
	f.Add([]byte("ghp_0123456789abcdefghijABCDEFGHIJ012345ghp_"), "ghp_0123456789")
	f.Fuzz(func(t *testing.T, data []byte, secret string) {
		s := New(githubToken)
		s.AddSecret(fuzzSecret(secret))
		for _, form := range s.forms {
			if strings.Contains(Mask, string(form)) {
				t.Skip() // masking would create the form it masks
			}
		}
		orig := append([]byte(nil), data...)
		once := s.Scrub(data)
		if !bytes.Equal(data, orig) {
			t.Fatal("Scrub modified its input")
		}
		if str := s.ScrubString(string(data)); str != string(once) {
			t.Fatalf("ScrubString %q != Scrub %q", str, once)
		}
		if twice := s.Scrub(once); !bytes.Equal(twice, once) {
			t.Fatalf("not idempotent:\n once %q\ntwice %q", once, twice)
		}
	})
}

// liveFuzzPatterns are the shapes of regex the early decision must get
// right: open runs, bounded runs, alternatives of different lengths,
// assertions on the next byte, case folding and non-ASCII runes.
var liveFuzzPatterns = []string{
	`eyJ[A-Za-z0-9+/_-]*={0,2}`,
	`"auth"\s*:\s*"[^"\\\s]{4,}"`,
	`gh[pousr]_[A-Za-z0-9]{3,8}`,
	`ab\b`, `ab\B[a-z]*`, `ab$`, `(?m)ab$`,
	`a(?:b|bcd|bcdef)`, `(?i)sk-[a-z]+`, `xé+`, `x.y`, `(?s)x.*y`,
}

// FuzzLiveDecides checks the claim the streaming hold-back rests on: when
// the automaton says a regex is decided on rest, no suffix changes what it
// matches there, nor where the match ends.
func FuzzLiveDecides(f *testing.F) {
	f.Add(uint8(0), []byte("eyJabc"), []byte("def ="))
	f.Add(uint8(3), []byte("ab"), []byte("c"))
	f.Add(uint8(9), []byte("x\xc3"), []byte("\xa9\xc3\xa9y"))
	f.Fuzz(func(t *testing.T, which uint8, rest, suffix []byte) {
		expr := `^(?:` + liveFuzzPatterns[int(which)%len(liveFuzzPatterns)] + `)`
		re := regexp.MustCompile(expr)
		var sc liveScratch
		if compileLive(expr).undecided(rest, &sc) {
			return
		}
		whole := append(append([]byte(nil), rest...), suffix...)
		if a, b := re.FindIndex(rest), re.FindIndex(whole); !slices.Equal(a, b) {
			t.Fatalf("%s decided on %q as %v, but with %q it matches %v", expr, rest, a, suffix, b)
		}
	})
}

// FuzzStreamLongToken streams data with open-ended token patterns (one with
// a 16 KiB MaxLen) in random pieces: the output must equal Scrub and the
// reference, whatever the split.
func FuzzStreamLongToken(f *testing.F) {
	f.Add([]byte("log eyJhdXRocyI6e30= done"), []byte{40, 1, 200, 2}, []byte{1, 5})
	f.Add([]byte(`{"auth": "dXNlcjpw"} wt_abcd!`), []byte{0, 3}, []byte{0xf0})
	f.Fuzz(func(t *testing.T, data, plants, splits []byte) {
		if len(data) > 1<<12 || len(plants) > 32 {
			t.Skip()
		}
		s := New(githubToken, configToken, authField, wordToken)
		s.AddSecret("hunter22")
		planted := []string{
			"eyJhdXRocyI6" + strings.Repeat("QUJD", 50) + "==",
			"eyJ1c2VybmFtZSI6",
			`"auth" : "dXNlcjpwYXNz"`,
			"wt_abcdef",
			fuzzToken,
			"hunter22",
		}
		in := append([]byte(nil), data...)
		for i := 0; i+1 < len(plants); i += 2 {
			at := int(plants[i]) * (len(in) + 1) / 256
			form := planted[int(plants[i+1])%len(planted)]
			in = append(in[:at], append([]byte(form), in[at:]...)...)
		}
		want := s.Scrub(in)
		if ref := naiveScrub(s, in); !bytes.Equal(want, ref) {
			t.Fatalf("Scrub(%q)\n got %q\nwant %q", in, want, ref)
		}
		chunks := splitWrites(in, splits)
		if got := streamChunks(t, s, chunks); !bytes.Equal(got, want) {
			t.Fatalf("stream of %q\n got %q\nwant %q", chunks, got, want)
		}
	})
}

// splitWrites cuts in into the writes the fuzzer's splits describe: 1 to 64
// bytes each, or all the rest for a split byte from 0xf0 (large writes take
// the four-lane path); one byte each when there are no splits.
func splitWrites(in, splits []byte) [][]byte {
	var chunks [][]byte
	for i, rest := 0, in; len(rest) > 0; i++ {
		n := 1
		if len(splits) > 0 {
			n = 1 + int(splits[i%len(splits)])%64
			if splits[i%len(splits)] >= 0xf0 {
				n = len(rest)
			}
		}
		n = min(n, len(rest))
		chunks, rest = append(chunks, rest[:n]), rest[n:]
	}
	return chunks
}
