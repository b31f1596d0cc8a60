package docker_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/tests"
)

// A fork bomb in a sandbox stops at its pids limit, and the resident stays
// responsive: requests sent while the bomb runs are answered, and the
// bomb's exec ends (by its timeout) with its tree killed. Its main shell
// execs its sleep: a fork of its own at the limit would end it (exit 2)
// before its timeout, which an exec over the keeper channel, started
// without a runc exec, reaches within milliseconds.
func TestDockerForkBombStaysContained(t *testing.T) {
	image := NeedDocker(t)
	h := SpawnDocker(t, tests.LiveOpts{KeepOut: true}, "")
	h.Init(tests.UniqueInstall("bomb"), nil)
	box := h.Create(map[string]any{"image": image, "pids_limit": 64})
	bomb := h.Send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "bomb", "timeout_s": 8,
		"argv": []string{"sh", "-c", "echo lit; b() { b | b & }; b; exec sleep 300"}})
	tests.WaitUntil(t, "the bomb to start", func() bool { return h.OutLen("bomb", "stdout") > 0 })
	// Meanwhile: the resident answers, and the sandbox itself still runs
	// a process once the pids limit leaves room (or reports it cannot).
	for i := range 5 {
		start := time.Now()
		var list protocol.ListOwnedResult
		h.Call(protocol.MethodSandboxList, nil, &list)
		if len(list.Sandboxes) != 1 {
			t.Fatalf("list_owned during the bomb: %+v", list)
		}
		t.Logf("list_owned %d during the bomb answered in %s", i, time.Since(start).Round(time.Millisecond))
	}
	m := h.Await(bomb)
	var res protocol.ExecResult
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || !res.TimedOut {
		t.Fatalf("the bomb's exec: %s %+v", m.Result, m.Error)
	}
	t.Logf("bomb result: %+v, stderr %q", res, tests.Tail(string(h.Out("bomb", "stderr")), 200))
	// The tree is gone: a ps in the sandbox sees a handful of processes.
	var ps string
	tests.WaitUntil(t, "the bomb's processes to go", func() bool {
		execID := "ps-" + time.Now().Format("150405.000000")
		id := h.Send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": execID, "argv": []string{"ps", "-o", "pid,args"}})
		r := h.Await(id)
		if r.Error != nil {
			return false
		}
		var pr protocol.ExecResult
		_ = json.Unmarshal(r.Result, &pr)
		ps = string(h.Out(execID, "stdout"))
		return pr.ExitCode == 0 && strings.Count(ps, "\n") < 8
	})
	t.Logf("after the bomb:\n%s", ps)
}

// An exec that allocates twice its sandbox's memory limit is reported as
// OOM-killed (exit 137), and the sandbox and the resident go on: the
// keeper (the sandbox's init) is the OOM killer's last choice, every
// command it starts its first (oomscore.go in the keeper).
func TestDockerMemoryHogIsReported(t *testing.T) {
	image := NeedDocker(t)
	h := SpawnDocker(t, tests.LiveOpts{KeepOut: true}, "")
	h.Init(tests.UniqueInstall("oom"), nil)
	box := h.Create(map[string]any{"image": image, "memory_mb": 32})
	var scores protocol.ExecResult
	h.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "scores",
		// The keeper is up at 1000 for the instant of each fork: the
		// command may run before it is back down, so its score is read
		// until it is (or for a second).
		"argv": []string{"sh", "-c", `cat /proc/self/oom_score_adj; for i in $(seq 100); do k=$(cat /proc/1/oom_score_adj); [ "$k" = 0 ] && break; sleep 0.01; done; echo "$k"`}}, &scores)
	if got := string(h.Out("scores", "stdout")); scores.ExitCode != 0 || got != "1000\n0\n" {
		t.Fatalf("oom_score_adj of a command, then of the keeper: %q (%+v); want 1000 and 0", got, scores)
	}
	// 64 MiB held in memory: tail keeps the "last line" of /dev/zero,
	// which never ends, so it grows until the limit kills it.
	var res protocol.ExecResult
	h.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "hog",
		"argv": []string{"sh", "-c", "head -c 67108864 /dev/zero | tail -c 67108864 > /dev/null"}}, &res)
	t.Logf("hog: %+v", res)
	if !res.OOMKilled || res.ExitCode != 137 {
		t.Fatalf("a process over its memory limit: %+v; want oom_killed and exit 137", res)
	}
	h.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "after", "argv": []string{"true"}}, &res)
	if res.ExitCode != 0 || res.OOMKilled {
		t.Fatalf("the sandbox after the OOM kill: %+v", res)
	}
}

// Output far past the announced output cap: the head up to the cap is
// delivered, the rest is counted, exactly. 300 MiB by default; with
// RESIDENT_LONG_TESTS=1, 4 GiB.
func TestDockerHugeOutputIsCapped(t *testing.T) {
	image := NeedDocker(t)
	size := int64(300 << 20)
	if os.Getenv("RESIDENT_LONG_TESTS") == "1" {
		size = 4 << 30
	}
	h := SpawnDocker(t, tests.LiveOpts{}, "")
	limits := h.Init(tests.UniqueInstall("cap"), nil).Limits
	box := h.Create(map[string]any{"image": image})
	start := time.Now()
	var res protocol.ExecResult
	h.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "flood",
		"argv": []string{"sh", "-c", "head -c " + itoa64(size) + " /dev/zero; head -c 1000 /dev/zero >&2"}}, &res)
	took := time.Since(start)
	got := h.OutLen("flood", "stdout")
	t.Logf("%d bytes produced in %s (%.0f MB/s): %d delivered, %d dropped (cap %d)", res.StdoutBytes, took.Round(time.Millisecond),
		float64(size)/took.Seconds()/1e6, got, res.StdoutDropped, limits.OutputCapBytes)
	if res.ExitCode != 0 || res.StdoutBytes != size {
		t.Fatalf("flood: %+v; want exit 0 and %d bytes counted", res, size)
	}
	if got != limits.OutputCapBytes || res.StdoutDropped != size-limits.OutputCapBytes {
		t.Fatalf("delivered %d and dropped %d of %d; want exactly %d and %d", got, res.StdoutDropped, size, limits.OutputCapBytes, size-limits.OutputCapBytes)
	}
	if res.StderrBytes != 1000 || res.StderrDropped != 0 || h.OutLen("flood", "stderr") != 1000 {
		t.Fatalf("stderr under the cap: %+v", res)
	}
}

func itoa64(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
