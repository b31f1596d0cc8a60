package hardening

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// configToken is shaped like the docker provider's docker-config-base64
// pattern: an open-ended base64 run after a prefix, with a MaxLen far longer
// than any ordinary match.
var configToken = TokenPattern{
	Name:     "config-base64",
	Prefixes: []string{"eyJhdXRocyI6", "eyJ1c2VybmFtZSI6"},
	Regexp:   regexp.MustCompile(`(?:eyJhdXRocyI6|eyJ1c2VybmFtZSI6)[A-Za-z0-9+/_-]*={0,2}`),
	MaxLen:   16 << 10,
}

// authField is shaped like docker-config-auth: a JSON field whose value
// ends at a quote.
var authField = TokenPattern{
	Name:     "config-auth",
	Prefixes: []string{`"auth"`},
	Regexp:   regexp.MustCompile(`"auth"\s*:\s*"[^"\\\s]{4,}"`),
	MaxLen:   4096,
}

// wordToken ends at a word boundary, an assertion on the byte after it.
var wordToken = TokenPattern{
	Name:     "word",
	Prefixes: []string{"wt_"},
	Regexp:   regexp.MustCompile(`wt_[a-z]{4,}\b`),
	MaxLen:   64,
}

// TestHoldBackFollowsOpenMatch: a token hit is held only while its regex
// can still go on, not until MaxLen bytes follow it.
func TestHoldBackFollowsOpenMatch(t *testing.T) {
	s := New(githubToken, configToken, authField, wordToken)
	for _, tc := range []struct {
		in   string
		held int
	}{
		{"x eyJhdXRocyI6abc", 15},       // the base64 run may go on
		{"x eyJhdXRocyI6abc ", 0},       // it ended: decided and masked
		{"x eyJhdXRocyI6abc=", 16},      // a second = may follow
		{"x eyJhdXRocyI6abc==", 0},      // none can
		{`{"auth": "abc`, 12},           // the value is open
		{`{"auth": "abcd"}`, 0},         // closed: nothing can extend it
		{`{"auth": 42}`, 0},             // not a match at all
		{`{"auth"`, 6},                  // the separator may follow
		{"wt_abcd", 7},                  // \b needs the next byte
		{"wt_abcd ", 0},                 // and has it
		{"x ghp_abc", 7},                // still short of its 36 characters
		{"x ghp_abc!", 0},               // cannot reach them any more
		{"eyJhdXRocyI6\xc3", 13},        // a rune not yet whole
		{"x eyJhdXRocyI6\xc3\xa9", 0},   // whole, and outside the class
		{"eyJhdXRocyI", 11},             // a partial prefix
		{strings.Repeat("a ", 9000), 0}, // longer than any MaxLen, nothing open
	} {
		st := s.Stream(func([]byte) error { return nil })
		st.Write([]byte(tc.in))
		if st.Buffered() != tc.held {
			t.Errorf("%q: holds %d bytes, want %d", tc.in, st.Buffered(), tc.held)
		}
	}
}

// TestQuietStreamsHoldLittle: with a 16 KiB MaxLen registered and no token
// open, a stream keeps only a partial prefix between writes, and its
// buffers do not grow with the size of the writes.
func TestQuietStreamsHoldLittle(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	s := New(githubToken, configToken, authField)
	for range 20 {
		s.AddSecret(randomSecret(r, 24))
	}
	var in bytes.Buffer
	for in.Len() < 1<<20 {
		in.Write(ordinaryText(r.IntN(3000), r.Uint64()))
		switch r.IntN(4) {
		case 0:
			in.WriteString(`{"auth":"dXNlcjpwYXNzd29yZA=="} `)
		case 1:
			in.WriteString("eyJhdXRocyI6e30= ")
		case 2:
			in.WriteString("eyJhdXRocy") // a prefix cut short
		}
	}
	var out bytes.Buffer
	st := s.Stream(func(b []byte) error { out.Write(b); return nil })
	data := in.Bytes()
	for len(data) > 0 {
		n := min(len(data), []int{20000, 64, 30000, 7}[r.IntN(4)])
		st.Write(data[:n])
		data = data[n:]
		if st.Buffered() > 64 || cap(st.pending) > keepBytes || cap(st.out) > keepBytes {
			t.Fatalf("holds %d bytes (buffer %d, output %d) with no token open", st.Buffered(), cap(st.pending), cap(st.out))
		}
	}
	st.Flush()
	if want := s.Scrub(in.Bytes()); !bytes.Equal(out.Bytes(), want) {
		t.Fatal("stream differs from Scrub")
	}
}

// TestLongConfigTokenSplit: a Docker config blob of 12 KB, written in
// pieces of every size, is masked whole, and the stream never holds more
// than the open token and the write that ends it.
func TestLongConfigTokenSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	auths := `{"auths":{"registry.example.com":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("user:"+randomSecret(r, 9000))) + `"}}}`
	token := base64.StdEncoding.EncodeToString([]byte(auths))
	if !strings.HasPrefix(token, "eyJhdXRocyI6") || len(token) < 12000 {
		t.Fatalf("test token %.20q... (%d bytes) is not a config blob", token, len(token))
	}
	s := New(githubToken, configToken, authField)
	in := []byte("before " + token + "\nafter")
	want := "before " + Mask + "\nafter"
	if got := s.ScrubString(string(in)); got != want {
		t.Fatalf("Scrub = %.40q...", got)
	}
	for _, size := range []int{1, 3, 100, 4096, 20000} {
		var out bytes.Buffer
		st := s.Stream(func(b []byte) error { out.Write(b); return nil })
		peak := 0
		for i := 0; i < len(in); i += size {
			st.Write(in[i:min(len(in), i+size)])
			peak = max(peak, st.Buffered())
		}
		st.Flush()
		if out.String() != want {
			t.Fatalf("%d-byte writes: got %.40q...", size, out.String())
		}
		if bound := len(token) + max(size, settleStep); peak > bound {
			t.Errorf("%d-byte writes: held %d bytes, more than the token and one write (%d)", size, peak, bound)
		}
	}
}

// TestTokenPastMaxLen: a run longer than MaxLen is cut at MaxLen in a
// stream as in Scrub, however it is split.
func TestTokenPastMaxLen(t *testing.T) {
	s := New(configToken)
	in := []byte("eyJhdXRocyI6" + strings.Repeat("QUJD", 5000) + " tail")
	want := s.Scrub(in)
	if !bytes.HasPrefix(want, []byte(Mask+"QUJD")) {
		t.Fatalf("Scrub = %.40q...", want)
	}
	for _, size := range []int{1, 777, 1 << 16} {
		var chunks [][]byte
		for i := 0; i < len(in); i += size {
			chunks = append(chunks, in[i:min(len(in), i+size)])
		}
		if got := streamChunks(t, s, chunks); !bytes.Equal(got, want) {
			t.Fatalf("%d-byte writes differ from Scrub", size)
		}
	}
}

// TestLiveProgDecides covers each way a regex thread can wait.
func TestLiveProgDecides(t *testing.T) {
	for _, tc := range []struct {
		re, rest  string
		undecided bool
	}{
		{`ab+c`, "ab", true},
		{`ab+c`, "abx", false},
		{`ab+c`, "abbc", false}, // matched, nothing can extend it
		{`ab+c?`, "abbc", false},
		{`ab+c*`, "abbc", true},
		{`ab\b`, "ab", true}, // the assertion needs the next byte
		{`ab\b`, "ab ", false},
		{`ab\B`, "abc", false},
		{`ab$`, "ab", true},
		{`(?m)ab$`, "ab\n", false},
		{`^ab`, "ab", false},
		{`a(?:b|bcd)`, "abc", true},
		{`a(?:b|bcd)`, "abx", false},
		{`(?i)sk-[a-z]+`, "SK-Ab", true},
		{`(?i)sk-[a-z]+`, "SK-Ab1", false},
		{`xé`, "x\xc3", true}, // half a rune
		{`xé`, "x\xc3\xa9", false},
		{`x[^a]`, "x\xff", false}, // an invalid byte is a whole rune
		{`x.`, "x", true},
		{`x.`, "x\n", false},
		{`(?s)x.y`, "x\n", true},
		{`x`, "y", false},
	} {
		var sc liveScratch
		lp := compileLive(`^(?:` + tc.re + `)`)
		if got := lp.undecided([]byte(tc.rest), &sc); got != tc.undecided {
			t.Errorf("%s on %q: undecided = %v, want %v", tc.re, tc.rest, got, tc.undecided)
		}
	}
}
