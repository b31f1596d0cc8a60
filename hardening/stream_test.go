package hardening

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// ordinaryText returns n bytes of log-like text that contains no secret.
func ordinaryText(n int, seed uint64) []byte {
	words := strings.Fields(`the quick brown fox jumps over lazy dog INFO WARN request served in ms
		status=200 path=/api/v1/items id= user agent Mozilla compile link test ok PASS FAIL
		{"level":"info","msg":"started"} 2024-05-01T12:00:00Z error: file not found 0x7ffd 42 3.14`)
	r := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(12) == 0 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.Bytes()[:n]
}

// randomSecret returns an n-byte alphanumeric secret, like most API keys.
func randomSecret(r *rand.Rand, n int) string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[r.IntN(len(alnum))]
	}
	return string(b)
}

func TestMegabytePassesThrough(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	s := New(githubToken)
	for range 100 {
		s.AddSecret(randomSecret(r, 24))
	}
	text := ordinaryText(1<<20, 1)
	if out := s.Scrub(text); &out[0] != &text[0] || len(out) != len(text) {
		t.Fatal("Scrub copied or changed clean text")
	}
	for _, size := range []int{1 << 20, 4096, 64, 7} {
		var chunks [][]byte
		for i := 0; i < len(text); i += size {
			chunks = append(chunks, text[i:min(len(text), i+size)])
		}
		if out := streamChunks(t, s, chunks); !bytes.Equal(out, text) {
			t.Fatalf("chunk size %d changed clean text", size)
		}
	}
}

// TestHoldBackIsMinimal checks what a Stream keeps after each write.
func TestHoldBackIsMinimal(t *testing.T) {
	s := New(githubToken)
	s.AddSecrets("hunter22", "abcdefgh", "efghijkl")
	for _, tc := range []struct {
		in   string
		held int
	}{
		{"plain text.", 0},
		{"plain text hun", 3},  // may become hunter22
		{"plain text hunx", 0}, // cannot any more
		{"hunter22", 0},        // complete, nothing can extend it
		{"x gh", 2},            // partial token prefix
		{"x ghp_abc", 7},       // token hit still short of MaxLen
		{"x abcdefghij", 6},    // "efghij" may become efghijkl; the mask is out
	} {
		st := s.Stream(func([]byte) error { return nil })
		st.Write([]byte(tc.in))
		if st.Buffered() != tc.held {
			t.Errorf("%q: holds %d bytes, want %d", tc.in, st.Buffered(), tc.held)
		}
	}
}

// TestSecretAddedMidStream: a secret registered between writes is caught
// when its beginning is still held back (here because another secret shares
// it), and takes effect for later bytes.
func TestSecretAddedMidStream(t *testing.T) {
	s := New()
	s.AddSecret("temporary1")
	var out bytes.Buffer
	st := s.Stream(func(b []byte) error { out.Write(b); return nil })
	st.Write([]byte("a tem"))
	s.AddSecret("temp4now")
	st.Write([]byte("p4now b temp4now c"))
	st.Flush()
	if want := "a [REDACTED] b [REDACTED] c"; out.String() != want {
		t.Fatalf("got %q want %q", out.String(), want)
	}
}

func TestEmitErrorSticks(t *testing.T) {
	boom := errors.New("boom")
	calls := 0
	st := New().Stream(func([]byte) error { calls++; return boom })
	if _, err := st.Write([]byte("abc")); err != boom {
		t.Fatalf("Write err = %v", err)
	}
	if n, err := st.Write([]byte("def")); n != 0 || err != boom {
		t.Fatalf("second Write = %d, %v", n, err)
	}
	if err := st.Flush(); err != boom || calls != 1 {
		t.Fatalf("Flush = %v after %d emits", err, calls)
	}
}

// TestRandomSplitsMatchScrub plants many secrets and encodings in text and
// compares random-split streams with Scrub and the reference.
func TestRandomSplitsMatchScrub(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	s := New(githubToken)
	var secrets []string
	for i := range 30 {
		secrets = append(secrets, randomSecret(r, 6+i))
	}
	s.AddSecrets(secrets...)
	for iter := range 200 {
		var b bytes.Buffer
		for b.Len() < 2000 {
			b.Write(ordinaryText(r.IntN(40), uint64(iter)))
			if r.IntN(3) == 0 {
				b.Write(s.forms[r.IntN(len(s.forms))])
			}
		}
		in := b.Bytes()
		want := s.Scrub(in)
		if ref := naiveScrub(s, in); !bytes.Equal(want, ref) {
			t.Fatalf("Scrub disagrees with reference\n got %q\nwant %q", want, ref)
		}
		if f := survivingForm(s, want); f != nil {
			t.Fatalf("form %q survived", f)
		}
		var chunks [][]byte
		for rest := in; len(rest) > 0; {
			n := min(len(rest), 1+r.IntN(50))
			chunks, rest = append(chunks, rest[:n]), rest[n:]
		}
		if got := streamChunks(t, s, chunks); !bytes.Equal(got, want) {
			t.Fatalf("stream differs from Scrub")
		}
	}
}

// Masks tells a caller whether the output differs from the input, without
// hashing both, whatever the split of the writes.
func TestStreamMasksCountsWhatWasRendered(t *testing.T) {
	s := New()
	s.AddSecret("s3cr3t-value-0042")
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"nothing to see here\n", false},
		{"key=s3cr3t-value-0042 and more", true},
		{"a partial s3cr3t-value-004 is not the secret", false},
	} {
		for _, step := range []int{1, 3, len(tc.in)} {
			st := s.Stream(func([]byte) error { return nil })
			for i := 0; i < len(tc.in); i += step {
				_, _ = st.Write([]byte(tc.in[i:min(i+step, len(tc.in))]))
			}
			if err := st.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := st.Masks() > 0; got != tc.want {
				t.Errorf("%q in writes of %d: masked %v, want %v", tc.in, step, got, tc.want)
			}
		}
	}
}
