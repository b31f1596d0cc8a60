package resident

import (
	"slices"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

func TestOwnership(t *testing.T) {
	fake := newFake()
	fake.plant("foreign", "resident-install-id", "other-install")
	fake.plant("prefix", "resident-install-id", "test-install-2")
	fake.plant("unlabelled", "someone-else", "x")
	h := startHost(t, fake)
	h.initialize(nil)

	for _, key := range []string{"resident-install-id", "Resident-Install-ID", "RESIDENT-INSTALL-ID"} {
		h.callErr(protocol.MethodSandboxCreate, map[string]any{"tags": map[string]string{key: "evil"}}, protocol.KindInvalidRequest)
	}
	if slices.Contains(fake.calls, "create") {
		t.Fatal("a refused create reached the provider")
	}

	var box protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{"image": "img"}, "tags": map[string]string{"job": "j1"}}, &box)
	var list protocol.ListOwnedResult
	h.call(protocol.MethodSandboxList, nil, &list)
	if len(list.Sandboxes) != 1 || list.Sandboxes[0].SandboxID != box.SandboxID || list.Sandboxes[0].Tags["job"] != "j1" {
		t.Fatalf("list_owned: %+v", list)
	}

	var owner protocol.ReadOwnerResult
	h.call(protocol.MethodSandboxOwner, map[string]any{"sandbox_id": box.SandboxID}, &owner)
	if owner.Owner == nil || *owner.Owner != "test-install" {
		t.Fatalf("read_owner of ours: %+v", owner)
	}
	for _, id := range []string{"foreign", "prefix", "unlabelled", "missing"} {
		var o protocol.ReadOwnerResult
		h.call(protocol.MethodSandboxOwner, map[string]any{"sandbox_id": id}, &o)
		if o.Owner != nil {
			t.Fatalf("read_owner %s must be null, got %q", id, *o.Owner)
		}
		var term protocol.TerminateResult
		h.call(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": id}, &term)
		if term.Existed {
			t.Fatalf("terminate %s must say existed=false", id)
		}
		h.callErr(protocol.MethodSandboxExec, map[string]any{"sandbox_id": id, "argv": []string{"echo"}, "exec_id": "x-" + id}, protocol.KindNotFound)
		h.callErr(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": id, "path": "f", "data": ""}, protocol.KindNotFound)
	}
	for _, c := range fake.calls {
		if c == "terminate foreign" || c == "terminate prefix" || c == "terminate unlabelled" || c == "exec echo" {
			t.Fatalf("another install's sandbox was touched: %s", c)
		}
	}

	var term protocol.TerminateResult
	h.call(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": box.SandboxID}, &term)
	if !term.Existed {
		t.Fatal("first terminate must say existed=true")
	}
	h.call(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": box.SandboxID}, &term)
	if term.Existed {
		t.Fatal("second terminate must succeed with existed=false")
	}
}

func TestCreateValidation(t *testing.T) {
	h := startHost(t, newFake())
	h.initialize(nil)
	bad := []map[string]any{
		{"spec": map[string]any{"env": map[string]string{"FAKE_SECRET_X": "v"}}},
		{"spec": map[string]any{"env": map[string]string{"1BAD": "v"}}},
		{"spec": map[string]any{"memory_mb": -1}},
		{"spec": map[string]any{"volumes": []map[string]any{{"name": "../x", "path": "/data"}}}},
		{"spec": map[string]any{"volumes": []map[string]any{{"name": "v", "path": "/d"}, {"name": "w", "path": "/d"}}}},
		{"tags": map[string]string{"bad key": "v"}},
		{"tags": map[string]string{"k": "line\nbreak"}},
		{"spec": map[string]any{"Image": "x"}},
	}
	for _, params := range bad {
		h.callErr(protocol.MethodSandboxCreate, params, protocol.KindInvalidRequest)
	}
}

func TestCustomTagPrefix(t *testing.T) {
	fake := newFake()
	h := startHost(t, fake)
	res := h.initialize(map[string]any{"tag_prefix": "openai4s"})
	if res.OwnerTag != "openai4s-install-id" {
		t.Fatalf("owner tag: %s", res.OwnerTag)
	}
	h.callErr(protocol.MethodSandboxCreate, map[string]any{"tags": map[string]string{"OpenAI4S-Install-Id": "x"}}, protocol.KindInvalidRequest)
	var box protocol.CreateResult
	// Another prefix's owner key is no more harmless than our own.
	h.callErr(protocol.MethodSandboxCreate, map[string]any{"tags": map[string]string{"resident-install-id": "x"}}, protocol.KindInvalidRequest)
	h.call(protocol.MethodSandboxCreate, map[string]any{"tags": map[string]string{"job": "j"}}, &box)
	if got := fake.boxes[box.SandboxID].Tags["openai4s-install-id"]; got != "test-install" {
		t.Fatalf("owner tag value: %q", got)
	}
}

func TestStoreOps(t *testing.T) {
	fake := newFake()
	fake.storeFiles["f.txt"] = "hello"
	h := startHost(t, fake)
	h.initialize(nil)
	var vols protocol.ListVolumesResult
	h.call(protocol.MethodStoreVolumes, nil, &vols)
	if len(vols.Volumes) != 1 {
		t.Fatalf("volumes: %+v", vols)
	}
	var dir protocol.ListDirResult
	h.call(protocol.MethodStoreListDir, map[string]any{"root": "vol", "path": ""}, &dir)
	h.callErr(protocol.MethodStoreListDir, map[string]any{"root": "vol", "path": "../x"}, protocol.KindInvalidRequest)
	h.callErr(protocol.MethodStoreListDir, map[string]any{"root": "vol", "limit": -1}, protocol.KindInvalidRequest)
	var file protocol.ReadFileResult
	h.call(protocol.MethodStoreReadFile, map[string]any{"root": "vol", "path": "f.txt", "stream_id": "s1"}, &file)
	if file.Size != 5 || file.SHA256 != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
		t.Fatalf("read_file: %+v", file)
	}
	if n := h.notifications(protocol.NotifyStoreData); len(n) != 1 {
		t.Fatalf("store/data notifications: %d", len(n))
	}
	h.callErr(protocol.MethodStoreReadFile, map[string]any{"root": "vol", "path": "missing", "stream_id": "s2"}, protocol.KindNotFound)
	h.callErr(protocol.MethodStoreReadFile, map[string]any{"root": "vol", "path": "f.txt"}, protocol.KindInvalidRequest)
}

// Volumes are owner-scoped by the provider: every store call tells it whose
// it is, the session's owner tag.
func TestStoreCallsCarryTheSessionsOwner(t *testing.T) {
	fake := newFake()
	fake.storeFiles["f.txt"] = "hello"
	h := startHost(t, fake)
	h.initialize(map[string]any{"tag_prefix": "acme"})
	h.call(protocol.MethodStoreVolumes, nil, nil)
	h.call(protocol.MethodStoreListDir, map[string]any{"root": "vol", "path": ""}, nil)
	h.call(protocol.MethodStoreReadFile, map[string]any{"root": "vol", "path": "f.txt", "stream_id": "s1"}, nil)
	for _, op := range []string{"list_volumes", "list_dir", "read_file"} {
		if call := "store " + op + " acme-install-id=test-install"; !fake.called(call) {
			t.Errorf("the provider never saw %q", call)
		}
	}
}

func TestStoreOpsWithoutStore(t *testing.T) {
	h := startHost(t, struct{ providerOnly }{providerOnly{newFake()}})
	res := h.initialize(nil)
	if res.Capabilities.Store || res.Capabilities.WriteFile {
		t.Fatalf("capabilities must say no store: %+v", res.Capabilities)
	}
	h.callErr(protocol.MethodStoreVolumes, nil, protocol.KindInvalidRequest)
	h.callErr(protocol.MethodStoreListDir, map[string]any{"root": "v"}, protocol.KindInvalidRequest)
	h.callErr(protocol.MethodStoreReadFile, map[string]any{"root": "v", "path": "p", "stream_id": "s"}, protocol.KindInvalidRequest)
	h.callErr(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": "x", "path": "p", "data": ""}, protocol.KindInvalidRequest)
}

// rememberingFake answers ownership from memory for the sandboxes in it, as
// the Docker provider does for containers it has seen.
type rememberingFake struct {
	*fakeProvider
	owners map[string]string // sandbox id -> its resident-install-id tag
}

var _ provider.OwnerMemory = (*rememberingFake)(nil)

func (f *rememberingFake) KnownOwner(id, ownerKey string) (string, bool) {
	owner, ok := f.owners[id]
	if ownerKey != "resident-install-id" {
		return "", ok
	}
	return owner, ok
}

// An exec is gated by the provider's memory of the owner when it has one;
// read_owner and terminate, which must know the sandbox still exists, ask
// the provider every time.
func TestExecOwnershipFromTheProvidersMemory(t *testing.T) {
	fake := &rememberingFake{fakeProvider: newFake(), owners: map[string]string{"foreign": "other-install"}}
	fake.plant("foreign", "resident-install-id", "other-install")
	h := startHost(t, fake)
	h.initialize(nil)
	box := newBox(t, h)
	fake.owners[box] = "test-install"

	var res protocol.ExecResult
	h.call(protocol.MethodSandboxExec, execParams(box, "e1", "echo", "hi"), &res)
	if fake.called("read_owner " + box) {
		t.Error("an exec in a sandbox whose owner the provider remembers asked ReadOwner")
	}
	h.callErr(protocol.MethodSandboxExec, execParams("foreign", "e2", "echo"), protocol.KindNotFound)
	if fake.called("exec echo") {
		t.Fatal("an exec reached another install's sandbox")
	}
	if !fake.called("read_owner foreign") {
		t.Error("a remembered foreign sandbox was refused without asking, faster than a missing one")
	}
	// Not remembered: asked as before.
	fake.plant("forgotten", "resident-install-id", "test-install")
	h.call(protocol.MethodSandboxExec, execParams("forgotten", "e3", "echo"), &res)
	if !fake.called("read_owner forgotten") {
		t.Error("an exec in a sandbox the provider does not remember skipped ReadOwner")
	}
	var owner protocol.ReadOwnerResult
	h.call(protocol.MethodSandboxOwner, map[string]any{"sandbox_id": box}, &owner)
	var term protocol.TerminateResult
	h.call(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": box}, &term)
	if !fake.called("read_owner "+box) || !term.Existed {
		t.Error("read_owner and terminate must ask the provider")
	}
}

// TestRequireIsolationRefusedWithoutIt: a host that requires isolation
// from a provider that does not announce it gets invalid_request, and
// nothing reaches the provider.
func TestRequireIsolationRefusedWithoutIt(t *testing.T) {
	fake := newFake() // announces isolation: false
	h := startHost(t, fake)
	h.initialize(nil)
	h.callErr(protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{"require_isolation": true}}, protocol.KindInvalidRequest)
	if slices.Contains(fake.calls, "create") {
		t.Fatal("a create requiring isolation reached a provider without it")
	}
	var box protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{"require_isolation": false}}, &box)
}
