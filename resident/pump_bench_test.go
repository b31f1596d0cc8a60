package resident

import (
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/hardening"
)

// chunkReader hands out data in pieces of at most chunk bytes, as a
// provider's pipe does (the docker provider's are at most 32 KiB).
type chunkReader struct {
	data  []byte
	chunk int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.chunk)], r.data)
	r.data = r.data[n:]
	return n, nil
}

type discardRWC struct{}

func (discardRWC) Read([]byte) (int, error)    { return 0, io.EOF }
func (discardRWC) Write(p []byte) (int, error) { return len(p), nil }
func (discardRWC) Close() error                { return nil }

// logText is base64-like log text: letters and digits, where the
// scrubber's token prefilters find candidates.
func logText(n int) []byte {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]byte, n)
	for i := range out {
		if i%77 == 76 {
			out[i] = '\n'
			continue
		}
		out[i] = alphabet[r.IntN(len(alphabet))]
	}
	return out
}

// BenchmarkOutputPump is one exec output stream from the provider's reader
// to framed bytes on the host's pipe (here discarded): cap, scrub, base64,
// frame, write. scrub=off has nothing registered, so the scrubber passes
// bytes through; scrub=on has 20 credentials and the fake provider's token
// pattern. The ratio of the two is the scrubber's share of the pump.
func BenchmarkOutputPump(b *testing.B) {
	payload := logText(8 << 20)
	for _, chunk := range []int{4 << 10, 32 << 10, 64 << 10} {
		for _, scrub := range []bool{false, true} {
			b.Run(fmt.Sprintf("chunk=%dK/scrub=%v", chunk>>10, scrub), func(b *testing.B) {
				scrubber := hardening.New()
				if scrub {
					for i := range 20 {
						scrubber.AddSecret(fmt.Sprintf("bench-credential-%02d-9f8e7d6c5b4a", i))
					}
					scrubber.AddPatterns(newFake().Secrets().Tokens...)
				}
				opts := Options{Provider: newFake(), Scrubber: scrubber, Logger: zap.NewNop()}
				opts.fill()
				opts.Limits.OutputCapBytes = 1 << 40
				s := newSession(opts)
				s.stream = newFrameStream(discardRWC{}, opts.Limits.MaxFrameBytes, scrubber, s.log)
				b.SetBytes(int64(len(payload)))
				b.ReportAllocs()
				for b.Loop() {
					res := <-s.startPump("e1", "stdout", &chunkReader{data: payload, chunk: chunk})
					if res.total != int64(len(payload)) {
						b.Fatalf("pumped %d bytes, want %d", res.total, len(payload))
					}
				}
			})
		}
	}
}
