package resident

import (
	"fmt"
	"strings"
	"testing"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/hardening/leaktest"
	"github.com/resident-dev/resident/protocol"
)

// TestEnvelopeErrorIDCarriesNoSecret sends requests the envelope check
// refuses, whose id is a credential spelled with \uXXXX escapes: the answer
// echoes the id canonically, so it is masked like any other string.
func TestEnvelopeErrorIDCarriesNoSecret(t *testing.T) {
	const secret = "id-Canary-5b2e9f70"
	h := startHost(t, newFake())
	h.initialize(map[string]any{"credentials": map[string]string{"token": secret}})
	var escaped strings.Builder
	for _, r := range secret {
		fmt.Fprintf(&escaped, `\u%04x`, r)
	}
	h.sendRaw(`{"jsonrpc":"1.0","id":"` + escaped.String() + `","method":"m"}`)
	h.sendRaw(`{"jsonrpc":"2.0","id":"` + escaped.String() + `","method":"m","params":{"a":1,"a":2}}`)
	// Envelope errors are answered on the read loop, before the next frame
	// is read: once this call is answered, both are on stdout.
	h.call(protocol.MethodSandboxList, nil, nil)
	masked := `"id":"` + hardening.Mask + `"`
	if n := strings.Count(h.rawOutput(), masked); n != 2 {
		t.Errorf("%d answers with %s, want 2: %s", n, masked, h.rawOutput())
	}
	leaktest.NoLeak(t, "stdout frames", leaktest.FramesView(t, h.rawOutput()), secret)
}

// TestControlCharacterCredentialInLogs: a provider error quoting a
// credential that holds \b and \f is logged by zap, which writes them as
// \u0008 and \u000c (encoding/json writes \b and \f).
func TestControlCharacterCredentialInLogs(t *testing.T) {
	const secret = "ctl\bpass\fword-91"
	h := startHost(t, newFake())
	h.initialize(map[string]any{"credentials": map[string]string{"token": secret}})
	box := newBox(t, h)
	msg := h.callErr(protocol.MethodSandboxExec, execParams(box, "e1", "wrapped", "dial", "token="+secret), protocol.KindTransient)
	leaktest.Masked(t, "error message", msg)
	logs := h.logs.String()
	if !strings.Contains(logs, `token=`+hardening.Mask) {
		t.Errorf("the error quoting the credential is not logged, masked: %s", logs)
	}
	leaktest.NoLeak(t, "debug logs", leaktest.LinesView(t, logs), secret)
}
