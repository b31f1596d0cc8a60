package docker_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/tests"

	"github.com/resident-dev/resident/hardening/leaktest"
)

// Docker store ops and exec working directories against a hostile sandbox:
// a sandbox plants links in its volume (absolute to a canary file on the
// host, climbing out of the volume's host directory into a sibling
// volume, to /proc/self/root, /proc/1/root and /proc/self/fd), then swaps
// one between a file inside and the sibling's canary while the host reads
// in a loop. No store op shows either canary; no exec with a /proc/self/fd
// or link working directory reads the host canary.
func TestDockerPathsNeverReachTheHost(t *testing.T) {
	image := NeedDocker(t)
	_, hostPath, hostSecret := tests.HostCanary(t)
	sibSecret := fmt.Sprintf("SIBLING-CANARY-%d", time.Now().UnixNano())
	h := SpawnDocker(t, tests.LiveOpts{KeepRaw: true, KeepOut: true}, "")
	h.Init(tests.UniqueInstall("dpaths"), nil)
	volA, volB := tests.UniqueInstall("pa"), tests.UniqueInstall("pb")
	tests.RemoveVolumesLater(t, volA, volB)
	box := h.Create(map[string]any{"image": image, "volumes": []map[string]any{{"name": volA, "path": "/data"}, {"name": volB, "path": "/sib"}}})
	h.Call(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": box, "path": "/sib/canary.txt", "data": []byte(sibSecret + "\n")}, nil)
	plant := strings.Join([]string{
		"echo fine > /data/ok.txt", "mkdir -p /data/sub",
		"ln -s " + hostPath + " /data/link-abs",
		"ln -s ../../../../../../../.. /data/link-climb",
		"ln -s ../../" + volB + "/_data/canary.txt /data/link-sib",
		"ln -s ../../../" + volB + "/_data /data/sub/link-sibdir",
		"ln -s /proc/self/root /data/link-proc",
		"ln -s /proc/1/root /data/link-init",
		"ln -s /proc/self/fd/0 /data/link-fd",
		"ln -s link-sib /data/link-chain",
	}, " && ")
	var res protocol.ExecResult
	h.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "plant", "argv": []string{"sh", "-c", plant}}, &res)
	if res.ExitCode != 0 {
		t.Fatalf("planting links: %+v %s", res, h.Out("plant", "stderr"))
	}
	paths := []string{"link-abs", "link-climb" + hostPath, "link-sib", "link-chain", "sub/link-sibdir/canary.txt",
		"link-proc" + hostPath, "link-init" + hostPath, "link-fd", "../" + volB + "/_data/canary.txt", "..", hostPath,
		"/proc/self/root" + hostPath, "/proc/self/fd/0", "/proc/1/root" + hostPath}
	start := time.Now()
	for _, p := range paths {
		m := h.Await(h.Send(protocol.MethodStoreReadFile, map[string]any{"root": volA, "path": p, "stream_id": "r"}))
		if m.Error == nil {
			t.Errorf("read_file %q succeeded: %s", p, m.Result)
		} else if k := m.Kind(); k != protocol.KindInvalidRequest && k != protocol.KindNotFound {
			t.Errorf("read_file %q: %s %s", p, k, m.Error.Message)
		}
	}
	for _, p := range []string{"link-climb", "sub/link-sibdir", "link-proc", "link-init/tmp", ".."} {
		if m := h.Await(h.Send(protocol.MethodStoreListDir, map[string]any{"root": volA, "path": p})); m.Error == nil && strings.Contains(string(m.Result), "canary") {
			t.Errorf("list_dir %q listed a directory outside the volume: %s", p, m.Result)
		}
	}
	t.Logf("%d hostile store paths refused in %s", len(paths)+5, time.Since(start).Round(time.Millisecond))

	// A link swapped in a loop by the sandbox while the host reads it.
	swapper := h.Send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "swapper", "timeout_s": 600, "argv": []string{"sh", "-c",
		"echo go; while :; do ln -sfn ok.txt /data/swap; ln -sfn ../../" + volB + "/_data/canary.txt /data/swap; ln -sfn " + hostPath + " /data/swap; done"}})
	tests.WaitUntil(t, "the swapper", func() bool { return h.OutLen("swapper", "stdout") > 0 })
	var ok, refused int
	for i := range 20 {
		m := h.Await(h.Send(protocol.MethodStoreReadFile, map[string]any{"root": volA, "path": "swap", "stream_id": fmt.Sprintf("s%d", i)}))
		if m.Error == nil {
			ok++
		} else {
			refused++
		}
	}
	h.Call(protocol.MethodExecKill, map[string]any{"exec_id": "swapper"}, nil)
	h.Await(swapper)
	t.Logf("swapped link: %d reads inside, %d refused", ok, refused)

	// Working directories: /proc/self/fd/N and the planted links.
	cwds := []string{"/data/link-climb", "/data/link-proc", "/data/sub/link-sibdir", "/data/link-init"}
	for n := range 6 {
		cwds = append(cwds, fmt.Sprintf("/proc/self/fd/%d", n))
	}
	for i, cwd := range cwds {
		execID := fmt.Sprintf("cwd-%d", i)
		m := h.Await(h.Send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": execID, "cwd": cwd,
			"argv": []string{"sh", "-c", "pwd; cat canary.txt " + strings.TrimPrefix(hostPath, "/") + " 2>/dev/null; true"}}))
		if m.Error != nil {
			t.Logf("cwd %q: %s: %s", cwd, m.Kind(), m.Error.Message)
		} else {
			var r protocol.ExecResult
			_ = json.Unmarshal(m.Result, &r)
			t.Logf("cwd %q: ran in %q", cwd, strings.TrimSpace(strings.SplitN(string(h.Out(execID, "stdout")), "\n", 2)[0]))
		}
	}
	h.Call(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": box}, nil)
	view := leaktest.FramesView(t, h.RawStdout())
	if strings.Contains(view, hostSecret) {
		t.Error("the host canary reached the host")
	}
	// The sibling canary is a file the sandbox legitimately sees at
	// /sib/canary.txt; it must never come out of volume A's store ops.
	if strings.Contains(view, sibSecret) {
		t.Error("the sibling volume's canary came out of volume A")
	}
}

// A FIFO a sandbox planted in its volume (and a link to it): store reads
// and listings of it are refused at once instead of hanging the request on
// an open that waits for a writer.
func TestDockerStoreRefusesAFIFO(t *testing.T) {
	image := NeedDocker(t)
	h := SpawnDocker(t, tests.LiveOpts{}, "")
	h.Init(tests.UniqueInstall("fifo"), nil)
	vol := tests.UniqueInstall("pf")
	tests.RemoveVolumesLater(t, vol)
	box := h.Create(map[string]any{"image": image, "volumes": []map[string]any{{"name": vol, "path": "/data"}}})
	var res protocol.ExecResult
	h.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "mk", "argv": []string{"sh", "-c", "mkfifo /data/fifo && ln -s fifo /data/link"}}, &res)
	if res.ExitCode != 0 {
		t.Fatalf("mkfifo: %+v", res)
	}
	for _, p := range []string{"fifo", "link"} {
		for _, method := range []string{protocol.MethodStoreReadFile, protocol.MethodStoreListDir} {
			start := time.Now()
			m, ok := h.AwaitWithin(h.Send(method, map[string]any{"root": vol, "path": p, "stream_id": "f"}), 60*time.Second)
			if !ok {
				t.Fatalf("%s %q: no answer within 60s (an open of the FIFO is blocking)", method, p)
			}
			if m.Kind() != protocol.KindInvalidRequest {
				t.Fatalf("%s %q: %s %+v, want invalid_request", method, p, m.Result, m.Error)
			}
			t.Logf("%s %q refused in %s: %s", method, p, time.Since(start).Round(time.Millisecond), m.Error.Message)
		}
	}
}
