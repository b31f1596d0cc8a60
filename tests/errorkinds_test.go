package tests

import (
	"encoding/base64"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
)

// kindCase is one error path and the kinds docs/protocol.md §6 documents
// for it; "" stands for a result (no error).
type kindCase struct {
	what   string
	method string
	params map[string]any
	want   []protocol.Kind
}

// kindHost is one provider under test, through the real binary.
type kindHost struct {
	name   string
	h      *LiveHost
	image  string
	limits protocol.Limits
}

// forEachProvider runs test once per provider under test (Providers), each
// through the real binary.
func forEachProvider(t *testing.T, test func(t *testing.T, k kindHost)) {
	for _, name := range Providers() {
		t.Run(name, func(t *testing.T) {
			image := ImageFor(t, name)
			h := SpawnLive(t, LiveOpts{Args: []string{"--provider", name}, Env: []string{"DOCKER_HOST=" + os.Getenv("DOCKER_HOST")}})
			res := h.Init(UniqueInstall("kinds-"+name), nil)
			test(t, kindHost{name: name, h: h, image: image, limits: res.Limits})
		})
	}
}

// expectKind sends one request and checks its answer: never internal,
// always one of the documented kinds.
func (k kindHost) expectKind(t *testing.T, c kindCase) LiveMsg {
	t.Helper()
	m := k.h.Await(k.h.Send(c.method, c.params))
	got := m.Kind()
	msg := ""
	if m.Error != nil {
		msg = m.Error.Message
	}
	if got == protocol.KindInternal || !slices.Contains(c.want, got) {
		t.Errorf("%s: answered %q (%s), want one of %q", c.what, got, msg, c.want)
	} else {
		t.Logf("%s: %q %s", c.what, got, msg)
	}
	return m
}

func (k kindHost) spec(extra map[string]any) map[string]any {
	spec := map[string]any{}
	if k.image != "" {
		spec["image"] = k.image
	}
	for key, v := range extra {
		spec[key] = v
	}
	return spec
}

// Every error path a host can reach on a provider answers its documented
// kind, and none answers internal (docs/protocol.md §6).
func TestProviderErrorPathsAnswerTheirKind(t *testing.T) {
	forEachProvider(t, func(t *testing.T, k kindHost) {
		h := k.h
		vol := UniqueInstall("kinds-vol")
		if k.name == "docker" {
			RemoveVolumesLater(t, vol)
		}
		box := h.Create(k.spec(map[string]any{"volumes": []map[string]any{{"name": vol, "path": "data"}}}))
		var res protocol.ExecResult
		h.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "done", "argv": []string{"true"}}, &res)
		gone := h.Create(k.spec(nil))
		h.Call(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": gone}, nil)
		expiring := h.Create(k.spec(map[string]any{"lifetime_s": 1}))
		data := base64.StdEncoding.EncodeToString([]byte("x"))
		missing := strings.Repeat("0", 64)
		if k.name == "local" {
			missing = "lcl-0000000000000000"
		}
		cases := []kindCase{
			{"exec in a sandbox that never existed", protocol.MethodSandboxExec, map[string]any{"sandbox_id": missing, "exec_id": "e1", "argv": []string{"true"}}, []protocol.Kind{protocol.KindNotFound}},
			{"exec in a terminated sandbox", protocol.MethodSandboxExec, map[string]any{"sandbox_id": gone, "exec_id": "e2", "argv": []string{"true"}}, []protocol.Kind{protocol.KindNotFound}},
			{"exec with a missing cwd", protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "e3", "argv": []string{"true"}, "cwd": "/no/such/dir"}, []protocol.Kind{protocol.KindNotFound}},
			{"exec of a missing program (reason no_such_file)", protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "e4", "argv": []string{"no-such-program"}}, []protocol.Kind{protocol.KindNotFound}},
			{"write_file into a terminated sandbox", protocol.MethodSandboxWrite, map[string]any{"sandbox_id": gone, "path": "a.txt", "data": data}, []protocol.Kind{protocol.KindNotFound}},
			{"read_owner of a terminated sandbox", protocol.MethodSandboxOwner, map[string]any{"sandbox_id": gone}, []protocol.Kind{""}},
			{"terminate of a terminated sandbox", protocol.MethodSandboxTerm, map[string]any{"sandbox_id": gone}, []protocol.Kind{""}},
			{"exec/kill of a finished exec", protocol.MethodExecKill, map[string]any{"exec_id": "done"}, []protocol.Kind{"", protocol.KindNotFound}},
			{"exec/stdin to a finished exec", protocol.MethodExecStdin, map[string]any{"exec_id": "done", "data": data}, []protocol.Kind{protocol.KindConflict, protocol.KindInvalidRequest, protocol.KindNotFound}},
			{"exec/kill of an unknown exec", protocol.MethodExecKill, map[string]any{"exec_id": "never"}, []protocol.Kind{protocol.KindNotFound}},
			{"list_dir of a missing volume", protocol.MethodStoreListDir, map[string]any{"root": vol + "-missing"}, []protocol.Kind{protocol.KindNotFound}},
			{"read_file of a missing volume", protocol.MethodStoreReadFile, map[string]any{"root": vol + "-missing", "path": "a", "stream_id": "s1"}, []protocol.Kind{protocol.KindNotFound}},
			{"read_file of a missing file", protocol.MethodStoreReadFile, map[string]any{"root": vol, "path": "no-such-file", "stream_id": "s2"}, []protocol.Kind{protocol.KindNotFound}},
			{"list_dir of a missing directory", protocol.MethodStoreListDir, map[string]any{"root": vol, "path": "no/such/dir"}, []protocol.Kind{protocol.KindNotFound}},
			{"read_file of a directory", protocol.MethodStoreReadFile, map[string]any{"root": vol, "path": "", "stream_id": "s3"}, []protocol.Kind{protocol.KindInvalidRequest}},
		}
		if k.name == "docker" {
			cases = append(cases, dockerCreateCases(k)...)
		}
		var before protocol.ListOwnedResult
		h.Call(protocol.MethodSandboxList, nil, &before)
		for _, c := range cases {
			k.expectKind(t, c)
		}
		var after protocol.ListOwnedResult
		h.Call(protocol.MethodSandboxList, nil, &after)
		for _, sb := range after.Sandboxes {
			if !slices.ContainsFunc(before.Sandboxes, func(b protocol.Sandbox) bool { return b.SandboxID == sb.SandboxID }) {
				t.Errorf("a refused create left a sandbox: %+v", sb)
			}
		}
		// An expired sandbox: conflict while it is listed as expired, or
		// not_found once it is gone (the providers differ on which today;
		// a stopped Docker container still takes files).
		awaitExpired(t, h, expiring)
		k.expectKind(t, kindCase{"exec in an expired sandbox", protocol.MethodSandboxExec,
			map[string]any{"sandbox_id": expiring, "exec_id": "e5", "argv": []string{"true"}}, []protocol.Kind{protocol.KindConflict, protocol.KindNotFound}})
		k.expectKind(t, kindCase{"write_file into an expired sandbox", protocol.MethodSandboxWrite,
			map[string]any{"sandbox_id": expiring, "path": "a.txt", "data": data}, []protocol.Kind{"", protocol.KindConflict, protocol.KindNotFound}})
	})
}

// awaitExpired waits until list_owned no longer shows id as running.
func awaitExpired(t *testing.T, h *LiveHost, id string) {
	t.Helper()
	WaitUntil(t, "the sandbox to expire", func() bool {
		var list protocol.ListOwnedResult
		h.Call(protocol.MethodSandboxList, nil, &list)
		for _, s := range list.Sandboxes {
			if s.SandboxID == id {
				return s.State != protocol.StateRunning
			}
		}
		return true
	})
}

// dockerCreateCases are the creates the engine refuses: kinds from the
// engine's typed errors (a network or image it lacks, a mount it rejects).
// The test engine runs with --bridge=none: it has no "bridge" network.
func dockerCreateCases(k kindHost) []kindCase {
	create := func(extra map[string]any) map[string]any { return map[string]any{"spec": k.spec(extra)} }
	return []kindCase{
		{"create on a network the engine lacks", protocol.MethodSandboxCreate, create(map[string]any{"network": "resident-no-such-net"}), []protocol.Kind{protocol.KindInvalidRequest}},
		{"create on bridge, which the test engine lacks", protocol.MethodSandboxCreate, create(map[string]any{"network": "bridge"}), []protocol.Kind{protocol.KindInvalidRequest}},
		{"create with a mount path that climbs out", protocol.MethodSandboxCreate, create(map[string]any{"volumes": []map[string]any{{"name": "kinds-rel", "path": "../up"}}}), []protocol.Kind{protocol.KindInvalidRequest}},
		{"create with an image from a registry that does not answer", protocol.MethodSandboxCreate, create(map[string]any{"image": "127.0.0.1:1/resident-missing:v1"}), []protocol.Kind{protocol.KindTransient, protocol.KindNotFound}},
		{"create with a malformed image name", protocol.MethodSandboxCreate, create(map[string]any{"image": "Not A/Valid::Ref"}), []protocol.Kind{protocol.KindInvalidRequest}},
	}
}
