package tests

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
)

// 64 concurrent requests against the real (race-built) binary: slow execs
// that stream output, mixed with fast list_owned and read_owner calls, sent
// from several goroutines at once. Every request gets exactly its own
// response, every frame parses (frames never interleave), each exec's
// output is exactly its own lines in order, and cancelling one exec kills
// only it: the others finish with exit 0.
func TestSixtyFourConcurrentRequests(t *testing.T) {
	h := SpawnLive(t, LiveOpts{KeepOut: true})
	h.Init("conc", nil)
	box := h.Create(nil)

	// The victim streams, then sleeps until cancelled.
	victim := h.Send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "victim",
		"argv": []string{"sh", "-c", "echo started; exec sleep 60"}})
	WaitUntil(t, "the victim's first output", func() bool { return h.OutLen("victim", "stdout") > 0 })

	const total, lines = 63, 20
	type sent struct {
		id, kind, execID string
	}
	var mu sync.Mutex
	var all []sent
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < total; i += 3 {
				var s sent
				switch i % 3 {
				case 0, 1: // slow exec, streaming its own tagged lines
					s.kind, s.execID = "exec", fmt.Sprintf("slow-%02d", i)
					script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do echo %s-line-$i; i=$((i+1)); sleep 0.02; done`, lines, s.execID)
					s.id = h.Send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": s.execID, "argv": []string{"sh", "-c", script}})
				default:
					if i%2 == 0 {
						s.kind = "list"
						s.id = h.Send(protocol.MethodSandboxList, nil)
					} else {
						s.kind = "owner"
						s.id = h.Send(protocol.MethodSandboxOwner, map[string]any{"sandbox_id": box})
					}
				}
				mu.Lock()
				all = append(all, s)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// Cancel the victim while the others are in flight.
	cancelled := time.Now()
	h.Notify(protocol.MethodCancelRequest, map[string]any{"id": json.Number(victim)})

	if m := h.Await(victim); m.Kind() != protocol.KindCancelled {
		t.Fatalf("the cancelled exec answered %+v %s", m.Error, m.Result)
	}
	t.Logf("victim cancelled in %s", time.Since(cancelled).Round(time.Millisecond))
	if len(all) != total {
		t.Fatalf("sent %d requests", len(all))
	}
	for _, s := range all {
		m := h.Await(s.id)
		if m.Error != nil {
			t.Errorf("%s %s: %s %s", s.kind, s.id, m.Error.Data.Kind, m.Error.Message)
			continue
		}
		switch s.kind {
		case "exec":
			var res protocol.ExecResult
			_ = json.Unmarshal(m.Result, &res)
			if res.ExitCode != 0 || res.Killed || res.TimedOut {
				t.Errorf("exec %s was disturbed: %+v", s.execID, res)
			}
			var want strings.Builder
			for i := range lines {
				fmt.Fprintf(&want, "%s-line-%d\n", s.execID, i)
			}
			if got := string(h.Out(s.execID, "stdout")); got != want.String() {
				t.Errorf("exec %s output is not exactly its own lines in order:\n%q", s.execID, got)
			}
		case "list":
			var res protocol.ListOwnedResult
			if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Sandboxes) != 1 {
				t.Errorf("list_owned %s: %s", s.id, m.Result)
			}
		case "owner":
			var res protocol.ReadOwnerResult
			if err := json.Unmarshal(m.Result, &res); err != nil || res.Owner == nil || *res.Owner != "conc" {
				t.Errorf("read_owner %s: %s", s.id, m.Result)
			}
		}
	}
	h.mu.Lock()
	responses, frames := len(h.responses), h.frames
	h.mu.Unlock()
	// initialize, create, the victim and the 63 others: no response twice,
	// none extra (the map is keyed by id, so count what arrived for each).
	if responses != total+3 {
		t.Errorf("%d responses, want %d", responses, total+3)
	}
	t.Logf("%d frames, all parsed", frames)
	h.Call(protocol.MethodShutdown, nil, nil)
}
