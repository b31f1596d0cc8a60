package hardening

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentAddAndScrub adds secrets from one goroutine while others
// scrub and stream. A secret whose AddSecret returned before a Scrub started
// must be masked by it; streams must never emit a torn or corrupted chunk.
func TestConcurrentAddAndScrub(t *testing.T) {
	s := New(githubToken)
	const total = 200
	secrets := make([]string, total)
	r := rand.New(rand.NewPCG(9, 9))
	for i := range secrets {
		secrets[i] = fmt.Sprintf("sec%03d-%s", i, randomSecret(r, 12))
	}
	var added atomic.Int64 // secrets[:added] are registered
	var wg sync.WaitGroup
	wg.Go(func() {
		for i, v := range secrets {
			s.AddSecret(v)
			added.Store(int64(i + 1))
		}
	})
	for w := range 3 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 2))
			for !t.Failed() && added.Load() < total {
				known := int(added.Load())
				if known == 0 {
					continue
				}
				v := secrets[r.IntN(known)]
				in := []byte("<" + v + "> ghp_0123456789abcdefghijABCDEFGHIJ012345 .")
				if out := s.Scrub(in); bytes.Contains(out, []byte(v)) {
					t.Errorf("registered secret %q survived Scrub: %q", v, out)
				}
				var got bytes.Buffer
				st := s.Stream(func(b []byte) error { got.Write(b); return nil })
				for _, c := range bytewise(in) {
					st.Write(c)
				}
				st.Flush()
				if bytes.Contains(got.Bytes(), []byte(v)) || !bytes.HasSuffix(got.Bytes(), []byte(Mask+" .")) {
					t.Errorf("stream output %q", got.Bytes())
				}
			}
		})
	}
	wg.Wait()
}
