package resident

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
)

func createdBox(t *testing.T, h *host) string {
	t.Helper()
	var res protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{"image": "x"}}, &res)
	return res.SandboxID
}

func errorOf(t *testing.T, h *host, method string, params any) protocol.ErrorData {
	t.Helper()
	m := h.await(h.send(method, params))
	if m.Error == nil {
		t.Fatalf("%s: want an error, got %s", method, m.Result)
	}
	return m.Error.Data
}

func TestSandboxReadFileStreamsScrubbedBytes(t *testing.T) {
	f := newFilesFake()
	h := startHost(t, f)
	h.initialize(map[string]any{"credentials": map[string]string{"token": "s3cr3t-value-123"}})
	id := createdBox(t, h)
	f.files["notes.txt"] = "hello s3cr3t-value-123 bye"
	var res protocol.ReadFileResult
	h.call(protocol.MethodSandboxReadFile, map[string]any{"sandbox_id": id, "path": "notes.txt", "stream_id": "r1"}, &res)
	var got strings.Builder
	for _, n := range h.notifications(protocol.NotifyStoreData) {
		var d protocol.StoreData
		if err := json.Unmarshal(n.Params, &d); err != nil || d.StreamID != "r1" {
			t.Fatalf("store/data %s: %v", n.Params, err)
		}
		got.Write(d.Data)
	}
	if strings.Contains(got.String(), "s3cr3t") || !strings.HasPrefix(got.String(), "hello ") || !res.Redacted || res.Size != int64(got.Len()) {
		t.Fatalf("read %q, result %+v", got.String(), res)
	}
}

// A missing file and a missing sandbox are both not_found; only the reason
// tells them apart, and it names the param it is about.
func TestFileReasonsTellMissingFileFromMissingSandbox(t *testing.T) {
	f := newFilesFake()
	h := startHost(t, f)
	h.initialize(nil)
	id := createdBox(t, h)
	file := errorOf(t, h, protocol.MethodSandboxReadFile, map[string]any{"sandbox_id": id, "path": "nope", "stream_id": "r"})
	box := errorOf(t, h, protocol.MethodSandboxReadFile, map[string]any{"sandbox_id": "fake-404", "path": "nope", "stream_id": "r"})
	if file != (protocol.ErrorData{Kind: protocol.KindNotFound, Reason: protocol.ReasonNoSuchFile, Field: protocol.FieldPath}) {
		t.Errorf("missing file: %+v", file)
	}
	if box != (protocol.ErrorData{Kind: protocol.KindNotFound}) {
		t.Errorf("missing sandbox: %+v", box)
	}
	dir := errorOf(t, h, protocol.MethodSandboxReadFile, map[string]any{"sandbox_id": id, "path": "sub/", "stream_id": "r"})
	if dir != (protocol.ErrorData{Kind: protocol.KindInvalidRequest, Reason: protocol.ReasonIsDirectory, Field: protocol.FieldPath}) {
		t.Errorf("directory: %+v", dir)
	}
	big := errorOf(t, h, protocol.MethodSandboxWrite, map[string]any{"sandbox_id": id, "path": "f", "data": make([]byte, 8<<20+1)})
	if big.Kind != protocol.KindQuota || big.Reason != protocol.ReasonTooLarge {
		t.Errorf("too large: %+v", big)
	}
	f.volumes["v1"] = false
	exists := errorOf(t, h, protocol.MethodCreateVolume, map[string]any{"name": "v1"})
	if exists.Kind != protocol.KindConflict || exists.Reason != protocol.ReasonExists {
		t.Errorf("existing volume: %+v", exists)
	}
}

func TestSandboxListDirBoundsTheLimit(t *testing.T) {
	f := newFilesFake()
	h := startHost(t, f, func(o *Options) { o.Limits = DefaultLimits(); o.Limits.MaxListDirEntries = 2 })
	h.initialize(nil)
	id := createdBox(t, h)
	f.files["a"], f.files["b"], f.files["c"] = "1", "22", "333"
	var res protocol.ListDirResult
	h.call(protocol.MethodSandboxListDir, map[string]any{"sandbox_id": id, "path": ".", "limit": 50}, &res)
	if len(res.Entries) != 2 || !res.Truncated {
		t.Fatalf("list_dir: %+v", res)
	}
	h.callErr(protocol.MethodSandboxListDir, map[string]any{"sandbox_id": "fake-404", "path": "."}, protocol.KindNotFound)
}

// A provider without an ability is refused by name, and initialize says so.
func TestMissingAbilitiesAreRefusedByName(t *testing.T) {
	h := startHost(t, providerOnly{newFake()})
	res := h.initialize(nil)
	c := res.Capabilities
	if c.SandboxFiles || c.Upload || c.VolumeAdmin || c.ExecUser || c.TTY || !c.Watch {
		t.Fatalf("capabilities: %+v", c)
	}
	id := createdBox(t, h)
	for _, tc := range []struct {
		method, capability string
		params             map[string]any
	}{
		{protocol.MethodSandboxReadFile, "sandbox_files", map[string]any{"sandbox_id": id, "path": "f", "stream_id": "s"}},
		{protocol.MethodSandboxListDir, "sandbox_files", map[string]any{"sandbox_id": id, "path": "."}},
		{protocol.MethodSandboxWrite, "upload", map[string]any{"sandbox_id": id, "path": "f", "stream_id": "s"}},
		{protocol.MethodCreateVolume, "volume_admin", map[string]any{"name": "v"}},
		{protocol.MethodDeleteVolume, "volume_admin", map[string]any{"name": "v"}},
		{protocol.MethodSandboxExec, "exec_user", map[string]any{"sandbox_id": id, "argv": []string{"echo"}, "exec_id": "e1", "user": "1000"}},
		{protocol.MethodSandboxExec, "tty", map[string]any{"sandbox_id": id, "argv": []string{"echo"}, "exec_id": "e2", "tty": map[string]any{"rows": 24, "cols": 80}}},
		{protocol.MethodSandboxCreate, "exec_user", map[string]any{"spec": map[string]any{"image": "x", "user": "nobody"}}},
	} {
		msg := h.callErr(tc.method, tc.params, protocol.KindInvalidRequest)
		if !strings.Contains(msg, "capabilities."+tc.capability) {
			t.Errorf("%s: %q does not name capabilities.%s", tc.method, msg, tc.capability)
		}
	}
}

func TestExecPassesUserAndResizesItsTerminal(t *testing.T) {
	f := newFilesFake()
	h := startHost(t, f)
	h.initialize(nil)
	id := createdBox(t, h)
	h.call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": id, "argv": []string{"echo", "hi"}, "exec_id": "u", "user": "1000:1000"}, nil)
	execID := h.send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": id, "argv": []string{"sh"}, "exec_id": "t", "tty": map[string]any{"rows": 24, "cols": 80}})
	h.call(protocol.MethodExecResize, map[string]any{"exec_id": "t", "rows": 50, "cols": 132}, nil)
	h.call(protocol.MethodExecStdin, map[string]any{"exec_id": "t", "data": []byte("typed"), "eof": true}, nil)
	if m := h.await(execID); m.Error != nil {
		t.Fatalf("tty exec: %s", m.Error.Message)
	}
	h.callErr(protocol.MethodExecResize, map[string]any{"exec_id": "t", "rows": 1, "cols": 1}, protocol.KindNotFound)
	f.fmu.Lock()
	defer f.fmu.Unlock()
	if len(f.users) != 2 || f.users[0] != "1000:1000" || len(f.resized) != 1 || f.resized[0] != (protocol.WindowSize{Rows: 50, Cols: 132}) {
		t.Fatalf("users %q, resized %v", f.users, f.resized)
	}
	if out := h.output("t", protocol.StreamStdout); out != "typed" {
		t.Fatalf("tty output %q", out)
	}
}

func TestWatchReportsThisSessionsChangesAndOthers(t *testing.T) {
	f := newFilesFake()
	h := startHost(t, f, func(o *Options) { o.WatchInterval = 20 * time.Millisecond })
	h.initialize(nil)
	before := createdBox(t, h)
	var snap protocol.ListOwnedResult
	h.call(protocol.MethodSandboxWatch, map[string]any{}, &snap)
	if len(snap.Sandboxes) != 1 || snap.Sandboxes[0].SandboxID != before {
		t.Fatalf("watch snapshot: %+v", snap)
	}
	id := createdBox(t, h)
	h.call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": id, "argv": []string{"exit", "3"}, "exec_id": "x"}, nil)
	h.call(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": id}, nil)
	f.plant("other-host-box", "resident-install-id", "test-install") // another host, same install
	events := func() []protocol.WatchEvent {
		var out []protocol.WatchEvent
		for _, n := range h.notifications(protocol.NotifyWatchEvent) {
			var e protocol.WatchEvent
			_ = json.Unmarshal(n.Params, &e)
			out = append(out, e)
		}
		return out
	}
	waitFor(t, "the other host's sandbox", func() bool {
		for _, e := range events() {
			if e.SandboxID == "other-host-box" && e.Event == protocol.WatchCreated {
				return true
			}
		}
		return false
	})
	got := events()
	want := []string{protocol.WatchCreated, protocol.WatchExecStart, protocol.WatchExecEnd, protocol.WatchTerminated}
	for i, w := range want {
		if got[i].Event != w || got[i].SandboxID != id {
			t.Fatalf("event %d: %+v, want %s of %s (all: %+v)", i, got[i], w, id, got)
		}
	}
	if got[2].ExitCode == nil || *got[2].ExitCode != 3 {
		t.Fatalf("exec_ended: %+v", got[2])
	}
	for _, e := range got {
		if e.SandboxID == before {
			t.Fatalf("a sandbox in the snapshot was reported as a change: %+v", e)
		}
	}
}

func TestVolumeAdminCreatesAndRefusesToDeleteAMountedVolume(t *testing.T) {
	f := newFilesFake()
	h := startHost(t, f)
	h.initialize(nil)
	h.call(protocol.MethodCreateVolume, map[string]any{"name": "data"}, nil)
	f.volumes["busy"] = true
	h.callErr(protocol.MethodDeleteVolume, map[string]any{"name": "busy"}, protocol.KindConflict)
	h.call(protocol.MethodDeleteVolume, map[string]any{"name": "data"}, nil)
	h.callErr(protocol.MethodDeleteVolume, map[string]any{"name": "data"}, protocol.KindNotFound)
	h.callErr(protocol.MethodCreateVolume, map[string]any{"name": "../x"}, protocol.KindInvalidRequest)
}
