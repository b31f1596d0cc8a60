package resident

import (
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
)

// The output cap cuts a stream wherever the bytes reach it, possibly in the
// middle of a secret. The part of the secret before the cut must not be
// sent: the scrubber still holds it back (it may become the secret), and
// the pump drops what is held back when the cap has cut the stream.
// Every cut position is tried, with the secret arriving in one write and
// byte by byte; sent plus dropped always equals what the process wrote.
func TestOutputCapNeverSendsPartOfASecret(t *testing.T) {
	const secret = "cap-canary-0d9e8f7a6b"
	const capBytes = 100
	h := startHost(t, newFake(), func(o *Options) { o.Limits = DefaultLimits(); o.Limits.OutputCapBytes = capBytes })
	h.initialize(map[string]any{"credentials": map[string]string{"t": secret}})
	box := newBox(t, h)
	for cut := 1; cut < len(secret); cut++ {
		lead := strings.Repeat("a", capBytes-cut)
		for _, perByte := range []bool{false, true} {
			argv := []string{"bytes", lead, secret, " and more after the cap"}
			if perByte {
				argv = []string{"bytes", lead}
				for _, c := range secret {
					argv = append(argv, string(c))
				}
				argv = append(argv, " and more")
			}
			execID := "cut-" + itoa(cut) + map[bool]string{false: "-one", true: "-bytes"}[perByte]
			var res protocol.ExecResult
			h.call(protocol.MethodSandboxExec, execParams(box, execID, argv...), &res)
			got := h.output(execID, "stdout")
			if strings.Contains(got, secret[:cut]) {
				t.Fatalf("cut %d (%s): %d bytes sent end with part of the secret: %q", cut, execID, len(got), got[max(0, len(got)-30):])
			}
			if int64(len(got))+res.StdoutDropped != res.StdoutBytes {
				t.Fatalf("cut %d: sent %d + dropped %d != written %d", cut, len(got), res.StdoutDropped, res.StdoutBytes)
			}
		}
	}
}
