package hardening

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestDenseMatchesLargeBuffers covers the four-lane scan of large buffers:
// matches everywhere, including across the lane boundaries, compared with
// the reference, and streamed in large writes.
func TestDenseMatchesLargeBuffers(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	s := New(githubToken)
	for i := range 20 {
		s.AddSecret(randomSecret(r, 6+2*i))
	}
	for iter := range 20 {
		var b bytes.Buffer
		for b.Len() < 20000 {
			b.Write(ordinaryText(r.IntN(8), uint64(iter)))
			switch r.IntN(4) {
			case 0:
				b.WriteString("ghp_0123456789abcdefghijABCDEFGHIJ012345")
			default:
				b.Write(s.forms[r.IntN(len(s.forms))])
			}
		}
		in := b.Bytes()
		want := s.Scrub(in)
		if ref := naiveScrub(s, in); !bytes.Equal(want, ref) {
			t.Fatalf("Scrub disagrees with reference")
		}
		for _, size := range []int{1500, 4096, 7777} {
			var chunks [][]byte
			for i := 0; i < len(in); i += size {
				chunks = append(chunks, in[i:min(len(in), i+size)])
			}
			if got := streamChunks(t, s, chunks); !bytes.Equal(got, want) {
				t.Fatalf("stream in %d-byte writes differs from Scrub", size)
			}
		}
	}
}

// TestOverlappingRunIsBounded: a process printing a secret that overlaps
// itself forever must not make the stream buffer the whole run.
func TestOverlappingRunIsBounded(t *testing.T) {
	s := New()
	s.AddSecret("abababab")
	in := bytes.Repeat([]byte("ab"), 50000)
	in = append(in, " end"...)
	var out bytes.Buffer
	st := s.Stream(func(b []byte) error { out.Write(b); return nil })
	for i := 0; i < len(in); i += 64 {
		st.Write(in[i:min(len(in), i+64)])
		if st.Buffered() > 128 {
			t.Fatalf("holds %d bytes inside an overlapping run", st.Buffered())
		}
	}
	st.Flush()
	if want := string(s.Scrub(in)); out.String() != want || want != Mask+" end" {
		t.Fatalf("got %q, Scrub %q", out.String(), want)
	}
}
