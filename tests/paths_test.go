package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"

	"github.com/resident-dev/resident/hardening/leaktest"
)

// escapePaths are store paths a host (or a link a sandbox planted) could use
// to leave a volume.
func escapePaths(canaryDir, canaryPath string) []string {
	return []string{
		"..", "../canary.txt", "../../../../../../../.." + canaryPath, "sub/../../canary.txt",
		canaryPath, "/" + canaryPath, "//" + canaryPath, "./../" + filepath.Base(canaryDir),
		"link-abs", "link-climb" + canaryPath, "link-dir/canary.txt", "link-chain", "sub/link-up/canary.txt",
		"/proc/self/root" + canaryPath, "proc/self/root" + canaryPath, "/proc/self/fd/0", "/proc/self/cwd/canary.txt",
		"/proc/1/root" + canaryPath, "link-proc" + canaryPath, "link-fd",
	}
}

// The local provider's store ops, through the real binary: .., absolute
// paths, links out of the volume (absolute, climbing, to a directory,
// chained, to /proc/self/root and /proc/self/fd), and a link swapped
// between a file inside and the host canary while reads run in a loop. No
// read or listing ever shows the canary.
func TestLocalStorePathsNeverReachTheHost(t *testing.T) {
	canaryDir, canaryPath, canary := HostCanary(t)
	state := t.TempDir()
	h := SpawnLive(t, LiveOpts{State: state, KeepRaw: true, KeepOut: true})
	h.Init("paths", nil)
	box := h.Create(map[string]any{"volumes": []map[string]any{{"name": "work", "path": "work"}}})
	h.Call(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": box, "path": "/work/ok.txt", "data": []byte("fine")}, nil)
	h.Call(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": box, "path": "/work/sub/inner.txt", "data": []byte("inner")}, nil)
	vol := filepath.Join(state, "local", "volumes", "work")
	links := map[string]string{
		"link-abs": canaryPath, "link-climb": "../../../../../../../../..", "link-dir": canaryDir,
		"link-chain": "link-abs", "sub/link-up": "../..", "link-proc": "/proc/self/root", "link-fd": "/proc/self/fd/0",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(vol, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range escapePaths(canaryDir, canaryPath) {
		m := h.Await(h.Send(protocol.MethodStoreReadFile, map[string]any{"root": "work", "path": p, "stream_id": "r"}))
		if m.Error == nil {
			t.Errorf("read_file %q succeeded: %s", p, m.Result)
		} else if k := m.Kind(); k != protocol.KindInvalidRequest && k != protocol.KindNotFound {
			t.Errorf("read_file %q: %s %s", p, k, m.Error.Message)
		}
		if m = h.Await(h.Send(protocol.MethodStoreListDir, map[string]any{"root": "work", "path": p})); m.Error == nil && strings.Contains(string(m.Result), "canary.txt") {
			t.Errorf("list_dir %q listed the host directory: %s", p, m.Result)
		}
	}

	// A link swapped between inside and the canary while reads loop.
	var stop atomic.Bool
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		targets := []string{"ok.txt", canaryPath, "sub", canaryDir, "../../../../../../../.." + canaryPath}
		for i := 0; !stop.Load(); i++ {
			tmp := filepath.Join(vol, fmt.Sprintf(".swap-%d", i))
			if os.Symlink(targets[i%len(targets)], tmp) == nil && os.Rename(tmp, filepath.Join(vol, "swap")) == nil {
				swaps.Add(1)
			}
		}
	}()
	var ok, refused int
	for i := range 300 {
		m := h.Await(h.Send(protocol.MethodStoreReadFile, map[string]any{"root": "work", "path": "swap", "stream_id": fmt.Sprintf("s%d", i)}))
		if m.Error == nil {
			ok++
		} else {
			refused++
		}
		h.Await(h.Send(protocol.MethodStoreListDir, map[string]any{"root": "work", "path": "swap"}))
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("swapped link: %d swaps, %d reads succeeded (inside), %d refused", swaps.Load(), ok, refused)
	h.Call(protocol.MethodShutdown, nil, nil)
	h.CloseAndWait(20 * time.Second)
	if view := leaktest.FramesView(t, h.RawStdout()); strings.Contains(view, canary) {
		t.Fatal("the host canary reached the host through a store op")
	}
	if strings.Contains(h.stderr.String(), canary) {
		t.Fatal("the host canary reached the logs")
	}
}

// An exec's working directory (local provider): /proc/self/fd/N, links out
// of the sandbox to the canary's directory, /proc links. The exec either is
// refused or runs inside the sandbox: `cat canary.txt` never prints the
// host canary. (local isolates nothing, so a process can read host files
// by absolute path; what is proven is that the resident never resolves a
// host-supplied path outside the sandbox.)
func TestLocalExecCwdStaysInside(t *testing.T) {
	canaryDir, _, canary := HostCanary(t)
	state := t.TempDir()
	h := SpawnLive(t, LiveOpts{State: state, KeepRaw: true, KeepOut: true})
	h.Init("cwd", nil)
	box := h.Create(nil)
	root := filepath.Join(state, "local", "sandboxes", box, "root")
	for name, target := range map[string]string{"out": canaryDir, "proc": "/proc", "fdlink": "/proc/self/fd/3", "cwdlink": "/proc/self/cwd"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil && !(errors.Is(err, fs.ErrExist) && isolatedLocal()) {
			t.Fatal(err) // isolated, /proc is a mount point the sandbox already has
		}
	}
	cwds := []string{"out", "/out", "proc/self/cwd", "fdlink", "cwdlink", "../../../../" + canaryDir, canaryDir}
	for n := range 12 {
		cwds = append(cwds, fmt.Sprintf("/proc/self/fd/%d", n))
	}
	for i, cwd := range cwds {
		execID := fmt.Sprintf("cwd-%d", i)
		m := h.Await(h.Send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": execID, "cwd": cwd,
			"argv": []string{"sh", "-c", "pwd; cat canary.txt 2>/dev/null; true"}}))
		out := string(h.Out(execID, "stdout"))
		if strings.Contains(out, canary) {
			t.Fatalf("exec with cwd %q read the host canary: %q", cwd, out)
		}
		if m.Error != nil {
			t.Logf("cwd %q: %s: %s", cwd, m.Kind(), m.Error.Message)
		} else {
			var res protocol.ExecResult
			_ = json.Unmarshal(m.Result, &res)
			// Isolated, the exec sees only the sandbox: pwd reads in its own
			// terms, and the canary check above is the proof.
			if !isolatedLocal() && !strings.HasPrefix(strings.TrimSpace(out), root) {
				t.Errorf("cwd %q ran in %q, outside the sandbox root", cwd, strings.TrimSpace(out))
			}
		}
	}
	if strings.Contains(leaktest.FramesView(t, h.RawStdout()), canary) {
		t.Fatal("the host canary reached the host")
	}
}

// A cwd link swapped between a directory inside the sandbox and the host
// canary's directory while execs loop: the check of the cwd and the
// process's chdir must see the same directory, or an exec runs outside.
func TestLocalExecCwdSwappedLink(t *testing.T) {
	canaryDir, _, canary := HostCanary(t)
	state := t.TempDir()
	h := SpawnLive(t, LiveOpts{State: state, KeepOut: true})
	h.Init("cwdswap", nil)
	box := h.Create(nil)
	root := filepath.Join(state, "local", "sandboxes", box, "root")
	if err := os.MkdirAll(filepath.Join(root, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		targets := []string{"inside", canaryDir}
		for i := 0; !stop.Load(); i++ {
			tmp := filepath.Join(root, fmt.Sprintf(".swap-%d", i))
			if os.Symlink(targets[i%2], tmp) == nil {
				_ = os.Rename(tmp, filepath.Join(root, "swapdir"))
			}
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()
	var ran, refused, escaped int
	for i := range 200 {
		execID := fmt.Sprintf("s-%d", i)
		m := h.Await(h.Send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": execID, "cwd": "swapdir",
			"argv": []string{"sh", "-c", "cat canary.txt 2>/dev/null; true"}}))
		if m.Error != nil {
			refused++
			continue
		}
		ran++
		if strings.Contains(string(h.Out(execID, "stdout")), canary) {
			escaped++
		}
	}
	t.Logf("%d execs ran inside, %d refused, %d escaped", ran, refused, escaped)
	if escaped > 0 {
		t.Fatalf("%d execs ran in the host directory a swapped link pointed to", escaped)
	}
}

// isolatedLocal says whether local runs its sandboxes under bubblewrap
// here (it does wherever bwrap is installed).
func isolatedLocal() bool {
	_, err := exec.LookPath("bwrap")
	return err == nil
}
