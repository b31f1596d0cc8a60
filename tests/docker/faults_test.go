package docker_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/tests"
)

// transientBound is how long an in-flight request may take to answer
// transient once the engine stops or freezes. The provider's documented
// figure is about 15 s (engineGrace) for an exec and 30 s (one control
// call) for anything else; this allows for a loaded machine.
const transientBound = 90 * time.Second

// The resident on its own private dockerd, during a streaming exec: the
// engine is frozen (SIGSTOP), stopped, and restarted. Each time the
// in-flight exec (and a list_owned sent meanwhile) answers transient within
// a bounded time, the next call works once the engine is back, and at the
// end the resident holds no more descriptors than before and no goroutine
// of an exec, an output pump or an engine stream survives.
func TestDockerEngineFaults(t *testing.T) {
	engine := startPrivateEngine(t, true)
	image := engine.busybox()
	h := SpawnDocker(t, tests.LiveOpts{Env: []string{"GOTRACEBACK=all"}}, engine.host)
	pid := h.Process().Pid
	h.Init(tests.UniqueInstall("faults"), nil)
	box := h.Create(map[string]any{"image": image})
	var res protocol.ExecResult
	h.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "warm", "argv": []string{"echo", "warm"}}, &res)
	h.Call(protocol.MethodSandboxList, nil, nil)
	fdsBefore, threadsBefore := tests.OpenFDs(t, pid), tests.Threads(t, pid)

	n := 0
	streaming := func() string {
		n++
		execID := fmt.Sprintf("stream-%d", n)
		id := h.Send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": execID, "timeout_s": 600,
			"argv": []string{"sh", "-c", "while :; do echo tick; sleep 0.1; done"}})
		tests.WaitUntil(t, execID+" to stream", func() bool { return h.OutLen(execID, "stdout") > 0 })
		return id
	}
	expectTransient := func(what, id string, since time.Time) time.Duration {
		t.Helper()
		m, ok := h.AwaitWithin(id, transientBound)
		took := time.Since(since)
		if !ok {
			t.Fatalf("%s: no answer within %s", what, transientBound)
		}
		if m.Kind() != protocol.KindTransient {
			t.Fatalf("%s: answered %s %s, want transient", what, m.Result, func() string {
				if m.Error != nil {
					return string(m.Error.Data.Kind) + ": " + m.Error.Message
				}
				return ""
			}())
		}
		t.Logf("%s: transient after %s: %s", what, took.Round(time.Millisecond), m.Error.Message)
		return took
	}
	nextCallWorks := func(what string) {
		t.Helper()
		start := time.Now()
		var list protocol.ListOwnedResult
		h.Call(protocol.MethodSandboxList, nil, &list)
		fresh := h.Create(map[string]any{"image": image})
		execID := fmt.Sprintf("after-%d", n)
		var r protocol.ExecResult
		h.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": fresh, "exec_id": execID, "argv": []string{"echo", "back"}}, &r)
		if r.ExitCode != 0 || h.OutLen(execID, "stdout") != 5 {
			t.Fatalf("%s: exec once the engine is back: %+v", what, r)
		}
		h.Call(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": fresh}, nil)
		box = h.Create(map[string]any{"image": image}) // the next fault's sandbox
		t.Logf("%s: list, create, exec and terminate work again (%s)", what, time.Since(start).Round(time.Millisecond))
	}

	// 1. Frozen.
	exec1 := streaming()
	frozen := time.Now()
	engine.signal(syscall.SIGSTOP)
	list1 := h.Send(protocol.MethodSandboxList, nil)
	expectTransient("exec while the engine is frozen", exec1, frozen)
	expectTransient("list_owned while the engine is frozen", list1, frozen)
	engine.signal(syscall.SIGCONT)
	nextCallWorks("after SIGCONT")

	// 2. Stopped, then started again.
	exec2 := streaming()
	stopped := time.Now()
	engine.stop()
	t.Logf("dockerd stopped in %s", time.Since(stopped).Round(time.Millisecond))
	expectTransient("exec when the engine stops", exec2, stopped)
	if m := h.Await(h.Send(protocol.MethodSandboxList, nil)); m.Kind() != protocol.KindTransient {
		t.Fatalf("list_owned with the engine down: %+v", m.Error)
	}
	engine.start()
	nextCallWorks("after the engine started again")

	// 3. Restarted while an exec streams (stop and start back to back).
	exec3 := streaming()
	restarted := time.Now()
	engine.stop()
	engine.start()
	expectTransient("exec across an engine restart", exec3, restarted)
	nextCallWorks("after the restart")

	// No leak: descriptors back to where they were (give idle HTTP
	// connections a little room), no exec machinery left running.
	h.Call(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": box}, nil)
	var fdsAfter int
	deadline := time.Now().Add(30 * time.Second)
	for fdsAfter = tests.OpenFDs(t, pid); fdsAfter > fdsBefore+2 && time.Now().Before(deadline); fdsAfter = tests.OpenFDs(t, pid) {
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("resident descriptors: %d before the faults, %d after; threads %d, %d", fdsBefore, fdsAfter, threadsBefore, tests.Threads(t, pid))
	if fdsAfter > fdsBefore+2 {
		t.Errorf("descriptor leak: %d before, %d after", fdsBefore, fdsAfter)
	}
	dump := goroutineDump(t, h)
	count := len(regexp.MustCompile(`(?m)^goroutine \d+ [^\n]*\[`).FindAllString(dump, -1))
	t.Logf("%d goroutines at the end", count)
	for _, leak := range []string{"resident.(*session).startPump", "resident.execute", "provider/docker.(*process)", "stdcopy.StdCopy", "docker.(*Provider).wait"} {
		if strings.Contains(dump, leak) {
			t.Errorf("a goroutine in %s survives the faults:\n%s", leak, tests.Tail(dump, 6000))
		}
	}
	if count > 40 {
		t.Errorf("%d goroutines at the end of the session: a leak\n%s", count, tests.Tail(dump, 6000))
	}
}

// goroutineDump makes the idle resident print every goroutine (SIGQUIT,
// GOTRACEBACK=all) and returns the dump; the process ends with it.
func goroutineDump(t *testing.T, h *tests.LiveHost) string {
	t.Helper()
	before := len(h.Stderr())
	if err := h.Process().Signal(syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Exited():
	case <-time.After(30 * time.Second):
		t.Fatal("no goroutine dump within 30s")
	}
	return h.Stderr()[before:]
}

// Without live-restore, stopping the engine stops every container: the
// in-flight exec's process really is killed. The host then hears, within
// the same bound, either transient (the engine went away first) or the
// exec's true end (exit 137, SIGKILL), never silence; once the engine is
// back the session works and the stopped sandbox is still listed.
func TestDockerEngineStopWithoutLiveRestore(t *testing.T) {
	engine := startPrivateEngine(t, false)
	image := engine.busybox()
	h := SpawnDocker(t, tests.LiveOpts{}, engine.host)
	h.Init(tests.UniqueInstall("nolive"), nil)
	box := h.Create(map[string]any{"image": image})
	id := h.Send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "stream", "timeout_s": 600,
		"argv": []string{"sh", "-c", "while :; do echo tick; sleep 0.1; done"}})
	tests.WaitUntil(t, "the exec to stream", func() bool { return h.OutLen("stream", "stdout") > 0 })
	stopped := time.Now()
	engine.stop()
	m, ok := h.AwaitWithin(id, transientBound)
	if !ok {
		t.Fatalf("no answer within %s of the engine stopping", transientBound)
	}
	var res protocol.ExecResult
	switch {
	case m.Kind() == protocol.KindTransient:
		t.Logf("exec: transient after %s: %s", time.Since(stopped).Round(time.Millisecond), m.Error.Message)
	case m.Error == nil && json.Unmarshal(m.Result, &res) == nil && res.ExitCode == 137 && res.Signal == "SIGKILL":
		t.Logf("exec: ended with the container after %s: %s", time.Since(stopped).Round(time.Millisecond), m.Result)
	default:
		t.Fatalf("exec when the engine stops: %s %+v", m.Result, m.Error)
	}
	engine.start()
	var list protocol.ListOwnedResult
	h.Call(protocol.MethodSandboxList, nil, &list)
	if len(list.Sandboxes) != 1 || list.Sandboxes[0].SandboxID != box {
		t.Fatalf("list_owned once the engine is back: %+v", list)
	}
	t.Logf("the sandbox after the engine restart: state %s", list.Sandboxes[0].State)
	fresh := h.Create(map[string]any{"image": image})
	h.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": fresh, "exec_id": "back", "argv": []string{"echo", "back"}}, &res)
	if res.ExitCode != 0 {
		t.Fatalf("exec once the engine is back: %+v", res)
	}
}
