package resident

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
)

func detachParams(box, execID string, argv ...string) map[string]any {
	p := execParams(box, execID, argv...)
	p["detach"] = true
	return p
}

// lastOffset is the offset of the last exec/output of execID: where an
// attach resumes.
func (h *host) lastOffset(execID string) (int64, bool) {
	var off int64
	found := false
	for _, n := range h.notifications(protocol.NotifyExecOutput) {
		var o protocol.ExecOutput
		if json.Unmarshal(n.Params, &o) == nil && o.ExecID == execID && o.Offset != nil {
			off, found = *o.Offset, true
		}
	}
	return off, found
}

func TestDetachedExecAnswersLikeAnExec(t *testing.T) {
	d := newDetachFake()
	h := startHost(t, d)
	init := h.initialize(nil)
	if !init.Capabilities.Detach || init.Limits.DetachedBufferBytes != d.ringBytes {
		t.Fatalf("initialize: detach %v, buffer %d; want true, %d", init.Capabilities.Detach, init.Limits.DetachedBufferBytes, d.ringBytes)
	}
	box := newBox(t, h)
	id := h.send(protocol.MethodSandboxExec, detachParams(box, "build", "make"))
	waitFor(t, "the detached exec to start", func() bool { return d.running(box, "build") })
	d.emit(box, "build", "stdout", "compiling\n")
	d.emit(box, "build", "stderr", "warning\n")
	d.end(box, "build", 3)
	m := h.await(id)
	var res protocol.ExecResult
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil {
		t.Fatalf("detached exec answered %+v", m)
	}
	if res.ExitCode != 3 || res.NextOffset == nil || *res.NextOffset != 18 || res.StdoutBytes != 10 || res.StderrBytes != 8 {
		t.Fatalf("result %+v (next_offset %v); want exit 3, next_offset 18, 10+8 bytes", res, res.NextOffset)
	}
	if h.output("build", "stdout") != "compiling\n" || h.output("build", "stderr") != "warning\n" {
		t.Fatalf("output %q / %q", h.output("build", "stdout"), h.output("build", "stderr"))
	}
}

// The point of detach: a session that goes (an editor reload, a harness
// crash) leaves the exec running, and a later session of the same install
// resumes exactly where the first one stopped.
func TestDetachedExecOutlivesItsSessionAndResumes(t *testing.T) {
	d := newDetachFake()
	first := startHost(t, d)
	first.initialize(nil)
	box := newBox(t, first)
	first.send(protocol.MethodSandboxExec, detachParams(box, "term", "sh"))
	waitFor(t, "the detached exec to start", func() bool { return d.running(box, "term") })
	d.emit(box, "term", "stdout", "before\n")
	waitFor(t, "the first session to see output", func() bool { return first.output("term", "stdout") == "before\n" })
	resume, ok := first.lastOffset("term")
	if !ok || resume != 7 {
		t.Fatalf("exec/output offset %d, %v; want 7", resume, ok)
	}
	_ = first.toRes.Close() // the host goes
	err := <-first.done
	first.done <- err // for the cleanup's wait
	if !d.running(box, "term") {
		t.Fatal("the detached exec ended with the session that started it")
	}
	d.emit(box, "term", "stdout", "while away\n")

	second := startHost(t, d)
	second.initialize(nil)
	id := second.send(protocol.MethodExecAttach, map[string]any{"exec_id": "term", "offset": resume}) // no sandbox_id: found
	waitFor(t, "the replay", func() bool { return second.output("term", "stdout") == "while away\n" })
	d.emit(box, "term", "stdout", "live\n")
	d.end(box, "term", 0)
	var res protocol.ExecResult
	m := second.await(id)
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.ExitCode != 0 || *res.NextOffset != 23 || res.OutputLost != 0 {
		t.Fatalf("attach answered %+v / %+v", m, res)
	}
	if got := second.output("term", "stdout"); got != "while away\nlive\n" {
		t.Fatalf("attach from %d showed %q; want only what came after", resume, got)
	}
}

func TestAttachCountsWhatTheRingLost(t *testing.T) {
	d := newDetachFake()
	d.ringBytes = 8
	h := startHost(t, d)
	h.initialize(nil)
	box := newBox(t, h)
	first := h.send(protocol.MethodSandboxExec, detachParams(box, "noisy", "yes"))
	waitFor(t, "the detached exec to start", func() bool { return d.running(box, "noisy") })
	d.emit(box, "noisy", "stdout", "aaaaaaaa")
	d.emit(box, "noisy", "stdout", "bbbbbbbb")
	d.end(box, "noisy", 0)
	h.await(first)
	before := h.output("noisy", "stdout")
	var res protocol.ExecResult
	h.call(protocol.MethodExecAttach, map[string]any{"sandbox_id": box, "exec_id": "noisy", "offset": 0}, &res)
	if res.OutputLost != 8 || *res.NextOffset != 16 {
		t.Fatalf("attach from 0 after the ring dropped 8 bytes: %+v; want output_lost 8, next_offset 16", res)
	}
	if got := strings.TrimPrefix(h.output("noisy", "stdout"), before); got != "bbbbbbbb" {
		t.Fatalf("replay %q; want what the ring kept", got)
	}
}

// A secret cut in two by the exec's own output chunks is never shown, and
// the resume offset never lets an attach skip the held-back bytes.
func TestDetachedOutputIsScrubbedAcrossChunks(t *testing.T) {
	const secret = "detach-canary-7d21c0ffee"
	d := newDetachFake()
	h := startHost(t, d)
	h.initialize(map[string]any{"credentials": map[string]string{"token": secret}})
	box := newBox(t, h)
	id := h.send(protocol.MethodSandboxExec, detachParams(box, "leak", "cat"))
	waitFor(t, "the detached exec to start", func() bool { return d.running(box, "leak") })
	d.emit(box, "leak", "stdout", "key="+secret[:10])
	waitFor(t, "the first chunk", func() bool { return strings.HasPrefix(h.output("leak", "stdout"), "key=") })
	if off, _ := h.lastOffset("leak"); off > 4 {
		t.Fatalf("resume offset %d is past the held-back start of a possible secret (4)", off)
	}
	d.emit(box, "leak", "stdout", secret[10:]+"\n")
	d.end(box, "leak", 0)
	h.await(id)
	if strings.Contains(h.rawOutput(), secret) || strings.Contains(h.rawOutput(), secret[:10]) {
		t.Fatal("the secret reached the host")
	}
	// Attaching again from the resume point replays the whole secret's
	// place, masked, not a fragment of it.
	second := h.send(protocol.MethodExecAttach, map[string]any{"sandbox_id": box, "exec_id": "leak", "offset": 4})
	h.await(second)
	if strings.Contains(h.rawOutput(), secret[10:]) {
		t.Fatal("a fragment of the secret reached the host on replay")
	}
}

func TestListAndKillDetachedExecs(t *testing.T) {
	const secret = "argv-canary-93ab11"
	d := newDetachFake()
	h := startHost(t, d)
	h.initialize(map[string]any{"credentials": map[string]string{"token": secret}})
	box := newBox(t, h)
	running := h.send(protocol.MethodSandboxExec, detachParams(box, "srv", "serve", "--token="+secret))
	waitFor(t, "the detached exec to start", func() bool { return d.running(box, "srv") })
	var list protocol.ListExecsResult
	h.call(protocol.MethodSandboxExecs, map[string]any{"sandbox_id": box}, &list)
	if len(list.Execs) != 1 || list.Execs[0].ExecID != "srv" || !list.Execs[0].Running || strings.Contains(strings.Join(list.Execs[0].Argv, " "), secret) {
		t.Fatalf("list_execs %+v", list)
	}
	// Another session kills it by sandbox and id; the follower sees killed.
	other := startHost(t, d)
	other.initialize(nil)
	other.call(protocol.MethodExecKill, map[string]any{"sandbox_id": box, "exec_id": "srv"}, nil)
	var res protocol.ExecResult
	m := h.await(running)
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || !res.Killed {
		t.Fatalf("killed detached exec answered %+v %+v", m, res)
	}
	other.callErr(protocol.MethodExecKill, map[string]any{"sandbox_id": box, "exec_id": "nope"}, protocol.KindNotFound)
}

func TestDetachIsRefusedWithoutTheCapability(t *testing.T) {
	h := startHost(t, newFake())
	if h.initialize(nil).Capabilities.Detach {
		t.Fatal("a provider without Detacher announced detach")
	}
	box := newBox(t, h)
	for _, call := range []struct {
		method string
		params any
	}{
		{protocol.MethodSandboxExec, detachParams(box, "x", "true")},
		{protocol.MethodExecAttach, map[string]any{"sandbox_id": box, "exec_id": "x"}},
		{protocol.MethodSandboxExecs, map[string]any{"sandbox_id": box}},
	} {
		if msg := h.callErr(call.method, call.params, protocol.KindInvalidRequest); !strings.Contains(msg, "detach") {
			t.Errorf("%s: %q does not name the capability", call.method, msg)
		}
	}
}

func TestDetachedExecsOfOtherInstallsAreNotFound(t *testing.T) {
	d := newDetachFake()
	d.plant("theirs", "resident-install-id", "someone-else")
	h := startHost(t, d)
	h.initialize(nil)
	h.callErr(protocol.MethodExecAttach, map[string]any{"sandbox_id": "theirs", "exec_id": "x"}, protocol.KindNotFound)
	h.callErr(protocol.MethodSandboxExecs, map[string]any{"sandbox_id": "theirs"}, protocol.KindNotFound)
	h.callErr(protocol.MethodExecKill, map[string]any{"sandbox_id": "theirs", "exec_id": "x"}, protocol.KindNotFound)
	h.callErr(protocol.MethodExecAttach, map[string]any{"exec_id": "nowhere"}, protocol.KindNotFound)
}

// exec/start is the background-job form: it answers once the exec runs,
// and the host follows it (or not) later.
func TestExecStartAnswersAtOnce(t *testing.T) {
	d := newDetachFake()
	h := startHost(t, d)
	h.initialize(nil)
	box := newBox(t, h)
	var started protocol.ExecStartResult
	h.call(protocol.MethodExecStart, execParams(box, "job-1", "make", "-j2"), &started)
	if started.ExecID != "job-1" || started.StartedAt == "" || !d.running(box, "job-1") {
		t.Fatalf("exec/start answered %+v; running %v", started, d.running(box, "job-1"))
	}
	h.callErr(protocol.MethodExecStart, execParams(box, "job-1", "make"), protocol.KindConflict)
	d.emit(box, "job-1", "stdout", "built\n")
	d.end(box, "job-1", 0)
	var res protocol.ExecResult
	h.call(protocol.MethodExecAttach, map[string]any{"sandbox_id": box, "exec_id": "job-1"}, &res)
	if h.output("job-1", "stdout") != "built\n" || res.ExitCode != 0 || *res.NextOffset != 6 {
		t.Fatalf("attach after exec/start: %q %+v", h.output("job-1", "stdout"), res)
	}
	h.callErr(protocol.MethodExecStart, execParams("not-mine", "job-2", "true"), protocol.KindNotFound)
}
