package resident

import (
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/protocol"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

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
//
// base64=stdlib is the same pump with the standard library's encoder (the
// one before protocol.AppendBase64), for the ratio in one run. cpu-s/GB is
// the process's CPU time (user and system) per GB pumped, which a loaded
// machine moves less than the wall time.
func BenchmarkOutputPump(b *testing.B) {
	payload := logText(8 << 20)
	for _, chunk := range []int{4 << 10, 32 << 10, 64 << 10} {
		for _, variant := range []struct {
			scrub  bool
			stdlib bool
		}{{false, false}, {true, false}, {true, true}} {
			scrub := variant.scrub
			name := fmt.Sprintf("chunk=%dK/scrub=%v", chunk>>10, scrub)
			if variant.stdlib {
				name += "/base64=stdlib"
			}
			b.Run(name, func(b *testing.B) {
				if variant.stdlib {
					appendBase64 = base64.StdEncoding.AppendEncode
					defer func() { appendBase64 = protocol.AppendBase64 }()
				}
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
				cpu0 := cpuTime()
				pumped := 0
				for b.Loop() {
					res := <-s.startPump("e1", "stdout", &chunkReader{data: payload, chunk: chunk})
					if res.total != int64(len(payload)) {
						b.Fatalf("pumped %d bytes, want %d", res.total, len(payload))
					}
					pumped += len(payload)
				}
				b.ReportMetric((cpuTime()-cpu0).Seconds()/(float64(pumped)/1e9), "cpu-s/GB")
			})
		}
	}
}
