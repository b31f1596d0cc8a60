package resident

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/protocol"
)

// benchSession serves a fake provider over pipes with a host that only
// counts frames, so the figure is the resident's own streaming path:
// pump, cap, scrub, base64, frame, write.
type benchSession struct {
	in        *io.PipeWriter
	responses chan []byte
	done      chan error
}

func startBench(b *testing.B, secrets int) *benchSession {
	b.Helper()
	scrubber := hardening.New()
	for i := range secrets {
		scrubber.AddSecret(fmt.Sprintf("bench-secret-%04d-0123456789abcdef", i))
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &benchSession{in: inW, responses: make(chan []byte, 16), done: make(chan error, 1)}
	limits := DefaultLimits()
	limits.OutputCapBytes = 1 << 40
	go func() {
		s.done <- Serve(context.Background(), pipeRWC{Reader: inR, Writer: outW, closers: []io.Closer{inR, outW}},
			Options{Provider: newFake(), Scrubber: scrubber, Logger: zap.NewNop(), Limits: limits})
	}()
	go func() {
		fr := protocol.NewFrameReader(outR, 1<<30)
		for {
			body, err := fr.Read()
			if err != nil {
				close(s.responses)
				return
			}
			if !bytes.Contains(body[:min(len(body), 40)], []byte(`"method"`)) {
				s.responses <- body
			}
		}
	}()
	b.Cleanup(func() {
		_ = inW.Close()
		<-s.done
	})
	return s
}

func (s *benchSession) call(b *testing.B, id int, method, params string) []byte {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
	if _, err := s.in.Write(protocol.AppendFrame(nil, []byte(body))); err != nil {
		b.Fatal(err)
	}
	resp := <-s.responses
	if bytes.Contains(resp, []byte(`"error"`)) {
		b.Fatalf("%s: %s", method, resp)
	}
	return resp
}

// BenchmarkExecStream measures exec output streamed to the host, per
// payload byte, with scrubbing of 0 and 100 registered secrets; the ratio of
// the two is the scrubber's cost on the whole path.
func BenchmarkExecStream(b *testing.B) {
	const payload = 64 << 20
	for _, secrets := range []int{0, 100} {
		b.Run(fmt.Sprintf("secrets=%d", secrets), func(b *testing.B) {
			s := startBench(b, secrets)
			s.call(b, 1, "initialize", `{"protocol_version":1,"install_id":"bench"}`)
			s.call(b, 2, "sandbox/create", `{}`)
			b.SetBytes(payload)
			b.ResetTimer()
			for i := range b.N {
				s.call(b, 10+i, "sandbox/exec", fmt.Sprintf(`{"sandbox_id":"fake-1","exec_id":"e%d","argv":["write","%d"]}`, i, payload))
			}
		})
	}
}

// BenchmarkRoundTrip is the per-request overhead of the resident: a
// list_owned through the whole stack with an in-memory provider.
func BenchmarkRoundTrip(b *testing.B) {
	s := startBench(b, 0)
	s.call(b, 1, "initialize", `{"protocol_version":1,"install_id":"bench"}`)
	b.ResetTimer()
	for i := range b.N {
		s.call(b, 10+i, "sandbox/list_owned", `{}`)
	}
}
