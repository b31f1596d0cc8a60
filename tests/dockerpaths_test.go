package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"

	"github.com/resident-dev/resident/hardening/leaktest"
)

// removeVolumesLater removes Docker volumes when the test ends (after the
// resident has terminated its sandboxes).
func removeVolumesLater(t *testing.T, names ...string) {
	t.Cleanup(func() {
		cli, err := client.New(client.FromEnv)
		if err != nil {
			return
		}
		defer cli.Close()
		for _, n := range names {
			for range 20 { // the sandbox may still be going away
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := cli.VolumeRemove(ctx, n, client.VolumeRemoveOptions{Force: true})
				cancel()
				if err == nil || strings.Contains(err.Error(), "no such volume") {
					break
				}
				time.Sleep(250 * time.Millisecond)
			}
		}
	})
}

// Docker store ops and exec working directories against a hostile sandbox:
// a sandbox plants links in its volume (absolute to a canary file on the
// host, climbing out of the volume's host directory into a sibling
// volume, to /proc/self/root, /proc/1/root and /proc/self/fd), then swaps
// one between a file inside and the sibling's canary while the host reads
// in a loop. No store op shows either canary; no exec with a /proc/self/fd
// or link working directory reads the host canary.
func TestDockerPathsNeverReachTheHost(t *testing.T) {
	image := needDocker(t)
	_, hostPath, hostSecret := hostCanary(t)
	sibSecret := fmt.Sprintf("SIBLING-CANARY-%d", time.Now().UnixNano())
	h := spawnDocker(t, liveOpts{keepRaw: true, keepOut: true}, "")
	h.init(uniqueInstall("dpaths"), nil)
	volA, volB := uniqueInstall("pa"), uniqueInstall("pb")
	removeVolumesLater(t, volA, volB)
	box := h.create(map[string]any{"image": image, "volumes": []map[string]any{{"name": volA, "path": "/data"}, {"name": volB, "path": "/sib"}}})
	h.call(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": box, "path": "/sib/canary.txt", "data": []byte(sibSecret + "\n")}, nil)
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
	h.call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "plant", "argv": []string{"sh", "-c", plant}}, &res)
	if res.ExitCode != 0 {
		t.Fatalf("planting links: %+v %s", res, h.out("plant", "stderr"))
	}
	paths := []string{"link-abs", "link-climb" + hostPath, "link-sib", "link-chain", "sub/link-sibdir/canary.txt",
		"link-proc" + hostPath, "link-init" + hostPath, "link-fd", "../" + volB + "/_data/canary.txt", "..", hostPath,
		"/proc/self/root" + hostPath, "/proc/self/fd/0", "/proc/1/root" + hostPath}
	start := time.Now()
	for _, p := range paths {
		m := h.await(h.send(protocol.MethodStoreReadFile, map[string]any{"root": volA, "path": p, "stream_id": "r"}))
		if m.Error == nil {
			t.Errorf("read_file %q succeeded: %s", p, m.Result)
		} else if k := m.Kind(); k != protocol.KindInvalidRequest && k != protocol.KindNotFound {
			t.Errorf("read_file %q: %s %s", p, k, m.Error.Message)
		}
	}
	for _, p := range []string{"link-climb", "sub/link-sibdir", "link-proc", "link-init/tmp", ".."} {
		if m := h.await(h.send(protocol.MethodStoreListDir, map[string]any{"root": volA, "path": p})); m.Error == nil && strings.Contains(string(m.Result), "canary") {
			t.Errorf("list_dir %q listed a directory outside the volume: %s", p, m.Result)
		}
	}
	t.Logf("%d hostile store paths refused in %s", len(paths)+5, time.Since(start).Round(time.Millisecond))

	// A link swapped in a loop by the sandbox while the host reads it.
	swapper := h.send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "swapper", "timeout_s": 600, "argv": []string{"sh", "-c",
		"echo go; while :; do ln -sfn ok.txt /data/swap; ln -sfn ../../" + volB + "/_data/canary.txt /data/swap; ln -sfn " + hostPath + " /data/swap; done"}})
	waitUntil(t, "the swapper", func() bool { return h.outLen("swapper", "stdout") > 0 })
	var ok, refused int
	for i := range 20 {
		m := h.await(h.send(protocol.MethodStoreReadFile, map[string]any{"root": volA, "path": "swap", "stream_id": fmt.Sprintf("s%d", i)}))
		if m.Error == nil {
			ok++
		} else {
			refused++
		}
	}
	h.call(protocol.MethodExecKill, map[string]any{"exec_id": "swapper"}, nil)
	h.await(swapper)
	t.Logf("swapped link: %d reads inside, %d refused", ok, refused)

	// Working directories: /proc/self/fd/N and the planted links.
	cwds := []string{"/data/link-climb", "/data/link-proc", "/data/sub/link-sibdir", "/data/link-init"}
	for n := range 6 {
		cwds = append(cwds, fmt.Sprintf("/proc/self/fd/%d", n))
	}
	for i, cwd := range cwds {
		execID := fmt.Sprintf("cwd-%d", i)
		m := h.await(h.send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": execID, "cwd": cwd,
			"argv": []string{"sh", "-c", "pwd; cat canary.txt " + strings.TrimPrefix(hostPath, "/") + " 2>/dev/null; true"}}))
		if m.Error != nil {
			t.Logf("cwd %q: %s: %s", cwd, m.Kind(), m.Error.Message)
		} else {
			var r protocol.ExecResult
			_ = json.Unmarshal(m.Result, &r)
			t.Logf("cwd %q: ran in %q", cwd, strings.TrimSpace(strings.SplitN(string(h.out(execID, "stdout")), "\n", 2)[0]))
		}
	}
	h.call(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": box}, nil)
	view := leaktest.FramesView(t, h.rawStdout())
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
	image := needDocker(t)
	h := spawnDocker(t, liveOpts{}, "")
	h.init(uniqueInstall("fifo"), nil)
	vol := uniqueInstall("pf")
	removeVolumesLater(t, vol)
	box := h.create(map[string]any{"image": image, "volumes": []map[string]any{{"name": vol, "path": "/data"}}})
	var res protocol.ExecResult
	h.call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "mk", "argv": []string{"sh", "-c", "mkfifo /data/fifo && ln -s fifo /data/link"}}, &res)
	if res.ExitCode != 0 {
		t.Fatalf("mkfifo: %+v", res)
	}
	for _, p := range []string{"fifo", "link"} {
		for _, method := range []string{protocol.MethodStoreReadFile, protocol.MethodStoreListDir} {
			start := time.Now()
			m, ok := h.awaitWithin(h.send(method, map[string]any{"root": vol, "path": p, "stream_id": "f"}), 60*time.Second)
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
