package resident

import (
	"fmt"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
)

// Every path a host sends is bounded by one rule, announced in initialize:
// over max_path_bytes is invalid_request, naming the bound, before any
// provider call; at the bound the path reaches the provider.
func TestEveryPathIsBoundedAsAnnounced(t *testing.T) {
	fake := newFake()
	h := startHost(t, fake)
	if got := h.initialize(nil).Limits.MaxPathBytes; got != 4096 {
		t.Fatalf("limits.max_path_bytes = %d, want 4096", got)
	}
	var box protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, map[string]any{}, &box)
	atBound := strings.Repeat("a", 4096)
	for _, long := range []string{atBound + "b", strings.Repeat("d/", 100<<10)} {
		for name, req := range map[string]struct {
			method string
			params map[string]any
		}{
			"list_dir":       {protocol.MethodStoreListDir, map[string]any{"root": "vol", "path": long}},
			"read_file":      {protocol.MethodStoreReadFile, map[string]any{"root": "vol", "path": long, "stream_id": "s"}},
			"write_file":     {protocol.MethodSandboxWrite, map[string]any{"sandbox_id": box.SandboxID, "path": long, "data": ""}},
			"exec cwd":       {protocol.MethodSandboxExec, map[string]any{"sandbox_id": box.SandboxID, "exec_id": fmt.Sprintf("e%d", len(long)), "argv": []string{"true"}, "cwd": long}},
			"create workdir": {protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{"workdir": long}}},
			"create volume":  {protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{"volumes": []map[string]any{{"name": "v", "path": long}}}}},
		} {
			msg := h.callErr(req.method, req.params, protocol.KindInvalidRequest)
			if !strings.Contains(msg, "at most 4096 bytes") {
				t.Errorf("%s with a %d-byte path: %q does not name the bound", name, len(long), msg)
			}
		}
	}
	if fake.called("write " + box.SandboxID + " " + atBound + "b") {
		t.Error("an over-long path reached the provider")
	}
	// At the bound: the provider answers (the fake has no such file).
	h.callErr(protocol.MethodStoreReadFile, map[string]any{"root": "vol", "path": atBound, "stream_id": "s"}, protocol.KindNotFound)
}
