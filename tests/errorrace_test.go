package tests

import (
	"fmt"
	"testing"

	"github.com/resident-dev/resident/protocol"
)

// Execs racing a terminate of their sandbox: each answers a result, or
// not_found (the sandbox is gone) or conflict (it is stopping), never
// internal.
func TestExecRacingTerminateIsNeverInternal(t *testing.T) {
	forEachProvider(t, func(t *testing.T, k kindHost) {
		h := k.h
		seen := map[protocol.Kind]int{}
		for round := range 8 {
			box := h.Create(k.spec(nil))
			var execs []string
			for i := range 6 {
				execs = append(execs, h.Send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box,
					"exec_id": fmt.Sprintf("race-%d-%d", round, i), "argv": []string{"sh", "-c", "echo hi; sleep 0.2"}}))
				if i == 2 {
					execs = append(execs, h.Send(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": box}))
				}
			}
			for _, id := range execs {
				m := h.Await(id)
				kind := m.Kind()
				seen[kind]++
				if kind != "" && kind != protocol.KindNotFound && kind != protocol.KindConflict {
					t.Errorf("round %d request %s: %s: %s", round, id, kind, m.Error.Message)
				}
			}
		}
		t.Logf("answers by kind (\"\" is a result): %v", seen)
	})
}

// initialize announces each provider's bound on one call: docker's 30 s
// (timing.api), none for local.
func TestCallBoundIsAnnounced(t *testing.T) {
	forEachProvider(t, func(t *testing.T, k kindHost) {
		want := map[string]int64{"local": 0, "docker": 30}[k.name]
		if got := k.limits.CallTimeoutS; got != want {
			t.Errorf("limits.call_timeout_s = %d; want %d", got, want)
		}
	})
}
