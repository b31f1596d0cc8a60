package resident

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/resident-dev/resident/protocol"
)

func newBox(t *testing.T, h *host) string {
	t.Helper()
	var box protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{}}, &box)
	return box.SandboxID
}

func execParams(box, execID string, argv ...string) map[string]any {
	return map[string]any{"sandbox_id": box, "exec_id": execID, "argv": argv}
}

func TestExecStreamsAndReports(t *testing.T) {
	h := startHost(t, newFake())
	h.initialize(nil)
	box := newBox(t, h)

	var res protocol.ExecResult
	h.call(protocol.MethodSandboxExec, execParams(box, "e1", "echo", "hello", "world"), &res)
	if got := h.output("e1", "stdout"); got != "hello world" || res.ExitCode != 0 || res.StdoutBytes != 11 {
		t.Fatalf("echo: %q %+v", got, res)
	}
	h.call(protocol.MethodSandboxExec, execParams(box, "e2", "err", "oops"), &res)
	if h.output("e2", "stderr") != "oops" || h.output("e2", "stdout") != "" || res.StderrBytes != 4 {
		t.Fatalf("stderr kept apart: %+v", res)
	}
	h.call(protocol.MethodSandboxExec, execParams(box, "e3", "exit", "7"), &res)
	if res.ExitCode != 7 {
		t.Fatalf("exit code: %+v", res)
	}
	h.call(protocol.MethodSandboxExec, execParams(box, "e4", "binary"), &res)
	if got := h.output("e4", "stdout"); got != allBytes() {
		t.Fatalf("binary output: %q", got)
	}
	// An exec id is taken while its exec is in flight, and free again once
	// it has answered.
	busy := h.send(protocol.MethodSandboxExec, execParams(box, "busy", "sleep"))
	h.callErr(protocol.MethodSandboxExec, execParams(box, "busy", "echo"), protocol.KindConflict)
	h.call(protocol.MethodExecKill, map[string]any{"exec_id": "busy"}, nil)
	h.await(busy)
	h.call(protocol.MethodSandboxExec, execParams(box, "e1", "echo"), nil)
	h.callErr(protocol.MethodSandboxExec, execParams(box, "e5"), protocol.KindInvalidRequest)
	h.callErr(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "argv": []string{"echo"}}, protocol.KindInvalidRequest)
	h.callErr(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "argv": []string{"echo"}, "exec_id": "e6", "timeout_s": -1}, protocol.KindInvalidRequest)
	h.callErr(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "argv": []string{"echo"}, "exec_id": "e7", "env": map[string]string{"FAKE_SECRET_TOKEN": "x"}}, protocol.KindInvalidRequest)
}

func TestExecOutputCapCountsDrops(t *testing.T) {
	h := startHost(t, newFake(), func(o *Options) { o.Limits = DefaultLimits(); o.Limits.OutputCapBytes = 1000 })
	h.initialize(nil)
	box := newBox(t, h)
	var res protocol.ExecResult
	h.call(protocol.MethodSandboxExec, execParams(box, "big", "write", "300000"), &res)
	if res.StdoutBytes != 300000 || res.StdoutDropped != 299000 || len(h.output("big", "stdout")) != 1000 {
		t.Fatalf("cap: %+v, sent %d", res, len(h.output("big", "stdout")))
	}
}

func TestExecTimeoutKillAndCancel(t *testing.T) {
	h := startHost(t, newFake())
	h.initialize(nil)
	box := newBox(t, h)

	var res protocol.ExecResult
	p := execParams(box, "slow", "sleep")
	p["timeout_s"] = 0.05
	h.call(protocol.MethodSandboxExec, p, &res)
	if !res.TimedOut || res.Killed || res.ExitCode != 137 {
		t.Fatalf("timeout: %+v", res)
	}

	id := h.send(protocol.MethodSandboxExec, execParams(box, "victim", "sleep"))
	h.call(protocol.MethodExecKill, map[string]any{"exec_id": "victim"}, nil)
	m := h.await(id)
	if m.Error != nil || !strings.Contains(string(m.Result), `"killed":true`) {
		t.Fatalf("killed exec: %+v %s", m.Error, m.Result)
	}
	// Answered: its record is gone, so a kill now finds nothing running.
	h.callErr(protocol.MethodExecKill, map[string]any{"exec_id": "victim"}, protocol.KindNotFound)
	h.callErr(protocol.MethodExecKill, map[string]any{"exec_id": "never"}, protocol.KindNotFound)

	id = h.send(protocol.MethodSandboxExec, execParams(box, "cancelled", "sleep"))
	h.notify(protocol.MethodCancelRequest, map[string]any{"id": mustAtoi(id)})
	m = h.await(id)
	if m.Error == nil || m.Error.Data.Kind != protocol.KindCancelled || m.Error.Code != protocol.CodeCancelled {
		t.Fatalf("cancelled exec: %+v", m)
	}
	h.call(protocol.MethodSandboxList, nil, nil)
}

// A start slower than timeout_s (an engine busy with other work, as on a
// loaded CI machine) is still the exec's own timeout: a result with
// timed_out, never a timeout error.
func TestExecTimeoutPassedWhileStartingIsAResult(t *testing.T) {
	fake := newFake()
	h := startHost(t, fake)
	h.initialize(nil)
	box := newBox(t, h)

	var res protocol.ExecResult
	p := execParams(box, "slowstart", "slowstart", "200", "sleep")
	p["timeout_s"] = 0.05
	h.call(protocol.MethodSandboxExec, p, &res)
	if !res.TimedOut || res.Killed || res.ExitCode != 137 || res.Signal != "SIGKILL" {
		t.Fatalf("timeout during the start: %+v", res)
	}
	if res.DurationMS < 200 {
		t.Fatalf("duration_ms %d leaves out the start", res.DurationMS)
	}
	if !fake.called("deadline set true") {
		t.Fatalf("the provider was not handed the deadline: %v", fake.calls)
	}
}

func TestExecStdin(t *testing.T) {
	h := startHost(t, newFake())
	h.initialize(nil)
	box := newBox(t, h)
	p := execParams(box, "cat", "cat")
	p["stdin"] = true
	id := h.send(protocol.MethodSandboxExec, p)
	// Pipelined right behind the exec, without waiting: order is kept.
	for i := range 5 {
		h.send(protocol.MethodExecStdin, map[string]any{"exec_id": "cat", "data": []byte(fmt.Sprintf("chunk%d;", i))})
	}
	h.call(protocol.MethodExecStdin, map[string]any{"exec_id": "cat", "eof": true}, nil)
	if m := h.await(id); m.Error != nil {
		t.Fatalf("cat: %+v", m.Error)
	}
	if got := h.output("cat", "stdout"); got != "chunk0;chunk1;chunk2;chunk3;chunk4;" {
		t.Fatalf("stdin order: %q", got)
	}
	h.call(protocol.MethodSandboxExec, execParams(box, "ended", "echo"), nil)
	h.callErr(protocol.MethodExecStdin, map[string]any{"exec_id": "ended", "data": []byte("x")}, protocol.KindNotFound)
	nostdin := h.send(protocol.MethodSandboxExec, execParams(box, "nostdin", "sleep"))
	h.callErr(protocol.MethodExecStdin, map[string]any{"exec_id": "nostdin", "data": []byte("x")}, protocol.KindInvalidRequest)
	h.call(protocol.MethodExecKill, map[string]any{"exec_id": "nostdin"}, nil)
	h.await(nostdin)
	h.callErr(protocol.MethodExecStdin, map[string]any{"exec_id": "unknown", "data": []byte("x")}, protocol.KindNotFound)
}

func TestConcurrentExecs(t *testing.T) {
	h := startHost(t, newFake())
	h.initialize(nil)
	box := newBox(t, h)
	ids := map[string]string{}
	for i := range 20 {
		execID := fmt.Sprintf("c%d", i)
		ids[execID] = h.send(protocol.MethodSandboxExec, execParams(box, execID, "echo", execID))
	}
	var wg sync.WaitGroup
	for execID, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if m := h.await(id); m.Error != nil {
				t.Errorf("%s: %+v", execID, m.Error)
			}
		}()
	}
	wg.Wait()
	for execID := range ids {
		if got := h.output(execID, "stdout"); got != execID {
			t.Fatalf("%s got %q", execID, got)
		}
	}
}

func TestExecConcurrencyLimitIsQuota(t *testing.T) {
	fake := newFake()
	h := startHost(t, fake, func(o *Options) { o.Limits = DefaultLimits(); o.Limits.MaxConcurrentExecs = 1 })
	h.initialize(nil)
	box := newBox(t, h)
	id := h.send(protocol.MethodSandboxExec, execParams(box, "hold", "sleep"))
	waitFor(t, "the first exec to hold its slot", func() bool { return fake.called("exec sleep") })
	h.callErr(protocol.MethodSandboxExec, execParams(box, "probe", "echo"), protocol.KindQuota)
	h.call(protocol.MethodExecKill, map[string]any{"exec_id": "hold"}, nil)
	h.await(id)
}

func mustAtoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

func allBytes() string {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return string(b)
}

// TestExecExclusiveReachesTheProvider: exclusive is carried to the provider,
// and an exec the provider killed to make room for an exclusive one answers
// killed: true.
func TestExecExclusiveReachesTheProvider(t *testing.T) {
	h := startHost(t, newFake())
	h.initialize(nil)
	box := newBox(t, h)

	var res protocol.ExecResult
	p := execParams(box, "grader", "exclusive")
	p["exclusive"] = true
	h.call(protocol.MethodSandboxExec, p, &res)
	if got := h.output("grader", "stdout"); got != "exclusive=true" || res.Killed {
		t.Fatalf("exclusive exec: stdout %q, %+v", got, res)
	}
	h.call(protocol.MethodSandboxExec, execParams(box, "plain", "exclusive"), &res)
	if got := h.output("plain", "stdout"); got != "exclusive=false" {
		t.Fatalf("exec without exclusive: stdout %q", got)
	}
	h.call(protocol.MethodSandboxExec, execParams(box, "evicted", "exclusive", "evicted"), &res)
	if !res.Killed || res.TimedOut || res.ExitCode != 137 || res.Signal != "SIGKILL" {
		t.Fatalf("exec killed for an exclusive one: %+v, want killed: true", res)
	}
	p = execParams(box, "typed", "echo")
	p["exclusive"] = "yes"
	h.callErr(protocol.MethodSandboxExec, p, protocol.KindInvalidRequest)
}
