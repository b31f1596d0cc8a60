package resident

import (
	"strings"
	"testing"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/hardening/leaktest"
	"github.com/resident-dev/resident/protocol"
)

const canary = "canary-7f3a9c21e5b84d06"

// leaks stops the test when any form of the canary (every row of the
// scrubber's form table) is in text.
func leaks(t *testing.T, surface, text string) {
	t.Helper()
	leaktest.NoLeak(t, surface, text, canary)
	if t.Failed() {
		t.FailNow()
	}
}

func TestCanaryNeverLeaves(t *testing.T) {
	fake := newFake()
	fake.storeFiles["secret.txt"] = "before " + canary + " after"
	h := startHost(t, fake)
	h.initialize(map[string]any{"credentials": map[string]string{"token": canary, "short": "abc"}})
	box := newBox(t, h)

	// Split across writes at every position, so a streaming scrubber that
	// only looks inside one write would miss it.
	for split := 1; split < len(canary); split++ {
		var res protocol.ExecResult
		execID := "split-" + string(rune('a'+split%26)) + strings.Repeat("x", split)
		h.call(protocol.MethodSandboxExec, execParams(box, execID, "bytes", "pre:"+canary[:split], canary[split:]+":post"), &res)
		got := h.output(execID, "stdout")
		if got != "pre:"+hardening.Mask+":post" {
			t.Fatalf("split at %d: %q", split, got)
		}
	}
	// Error messages, from a provider and from the resident itself.
	msg := h.callErr(protocol.MethodSandboxExec, execParams(box, "err1", "fail", "not_found", "lookup https://user:"+canary+"@host/x?token="+canary), protocol.KindNotFound)
	if !strings.Contains(msg, hardening.Mask) {
		t.Fatalf("provider error not masked: %q", msg)
	}
	h.callErr(protocol.MethodSandboxExec, execParams(box, "err2", "plainerr", "wrapped: "+canary), protocol.KindTransient)
	running := h.send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "argv": []string{"sleep"}, "exec_id": canary})
	h.callErr(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "argv": []string{"echo"}, "exec_id": canary}, protocol.KindConflict)
	h.call(protocol.MethodExecKill, map[string]any{"exec_id": canary}, nil)
	h.await(running)
	// Result fields and tags.
	var created protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, map[string]any{"tags": map[string]string{"note": canary}}, &created)
	var list protocol.ListOwnedResult
	h.call(protocol.MethodSandboxList, nil, &list)
	// Store data.
	var file protocol.ReadFileResult
	h.call(protocol.MethodStoreReadFile, map[string]any{"root": "v", "path": "secret.txt", "stream_id": "s"}, &file)
	if !file.Redacted {
		t.Fatal("read_file must say it redacted")
	}
	// A token the provider's regex knows, never registered as a literal.
	h.call(protocol.MethodSandboxExec, execParams(box, "tok", "bytes", "x fk_abcdefghij", "0123456789 y"), nil)
	if got := h.output("tok", "stdout"); got != "x "+hardening.Mask+" y" {
		t.Fatalf("token: %q", got)
	}
	h.call(protocol.MethodShutdown, nil, nil)
	<-h.done
	h.done <- nil

	raw := h.rawOutput()
	leaks(t, "stdout frames", raw)
	leaks(t, "stderr logs", h.logs.String())
	if !strings.Contains(raw, hardening.Mask) || !strings.Contains(h.logs.String(), hardening.Mask) {
		t.Fatal("the mask must appear on both surfaces, proving they were exercised")
	}
	if !strings.Contains(h.logs.String(), "too short") {
		t.Fatal("a degenerate credential must be warned about")
	}
}

// A secret that starts with an escape letter can match JSON text right after
// a backslash ("\n" + "ightly..." encodes as \nightly...). The frame must
// stay valid JSON and the secret must still be masked.
func TestScrubbedFrameStaysValidJSON(t *testing.T) {
	const secret = "nightly-token-4c2d8e"
	fake := newFake()
	h := startHost(t, fake)
	h.initialize(map[string]any{"credentials": map[string]string{"t": secret}})
	box := newBox(t, h)
	msg := h.callErr(protocol.MethodSandboxExec, execParams(box, "j", "fail", "not_found", "line\n"+secret[1:]+" and "+secret), protocol.KindNotFound)
	if strings.Contains(msg, secret) || !strings.Contains(msg, hardening.Mask) {
		t.Fatalf("message: %q", msg)
	}
}
