package resident

import (
	"encoding/json"
	"runtime"
	"testing"

	"github.com/resident-dev/resident/protocol"
)

// A frame near the limit costs the resident its own bytes and the decoded
// data, not a chain of copies: it once took about 120 MB of temporaries
// (an envelope copy of the params, jsonrpc2's map of interface values and
// its re-encoding, a string of every value the key check skipped, then the
// decode). TotalAlloc counts every allocation, freed or not, so each
// transient copy shows.
func TestLargeFrameCostsLittleMoreThanItself(t *testing.T) {
	h := startHost(t, newFake())
	h.initialize(nil)
	box := newBox(t, h)
	p := execParams(box, "drain", "drain")
	p["stdin"] = true
	exec := h.send(protocol.MethodSandboxExec, p)

	data := make([]byte, 11<<20)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1000, "method": protocol.MethodExecStdin,
		"params": map[string]any{"exec_id": "drain", "data": data}})
	if err != nil {
		t.Fatal(err)
	}
	frame := protocol.AppendFrame(nil, body)
	got := allocatedBy(func() {
		if _, err := h.toRes.Write(frame); err != nil {
			t.Fatal(err)
		}
		if m := h.await("1000"); m.Error != nil {
			t.Fatalf("exec/stdin: %+v", m.Error)
		}
	})
	// The frame body, the decoded data and small change.
	budget := uint64(len(body)) + uint64(len(data)) + 4<<20
	t.Logf("a %d byte frame allocated %d bytes (budget %d)", len(body), got, budget)
	if got > budget {
		t.Fatalf("a %d byte frame allocated %d bytes, more than itself and its decoded data (%d)", len(body), got, budget)
	}
	h.call(protocol.MethodExecStdin, map[string]any{"exec_id": "drain", "eof": true}, nil)
	h.await(exec)
}

func allocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
