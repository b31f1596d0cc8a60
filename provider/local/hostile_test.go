package local_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Hostile commands, checked from the host's /proc: after a kill no process
// works in the sandbox any more, whatever the command did to its ancestry.
// They run only where local isolates: unisolated, kill -9 $PPID would kill
// this test binary, which is the resident's place here.

func TestKillParentThenTimeoutLeavesNothing(t *testing.T) {
	p, id, root := isolatedSandbox(t)
	c, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	r := startCtx(t, c, p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "kill -9 $PPID; exec sleep 1000"}})
	if st := r.wait(t); st.Code != 137 || st.Signal != "SIGKILL" {
		t.Errorf("exec past its deadline: %+v, want 137 SIGKILL", st)
	}
	awaitNothingIn(t, root)
}

func TestSubshellOrphanOfAKilledParentDiesOnTimeout(t *testing.T) {
	p, id, root := isolatedSandbox(t)
	c, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	r := startCtx(t, c, p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "(sleep 2000 &); kill -9 $PPID; sleep 1000"}})
	r.wait(t)
	awaitNothingIn(t, root)
}

func TestSetsidDoubleForkDiesOnCancel(t *testing.T) {
	p, id, root := isolatedSandbox(t)
	c, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := startCtx(t, c, p, id, provider.ExecRequest{Argv: []string{"sh", "-c", `setsid sh -c 'cd /; (sleep 2000.4242 &) &'; echo ready; exec sleep 1000`}})
	await(t, func() bool { return strings.Contains(r.out(), "ready") })
	// The double-forked sleep works in / and left the exec's session and
	// ancestry: only the namespace still ties it to the exec.
	cancel()
	r.wait(t)
	awaitNothingIn(t, root)
	if n := uniqueSleeps(); n != 0 {
		t.Fatalf("%d double-forked sleeps survived the kill", n)
	}
}

// TestExecCannotSeeTheResident: a sandbox process finds neither this
// process nor any other outside its exec in its /proc.
func TestExecCannotSeeTheResident(t *testing.T) {
	p, id, _ := isolatedSandbox(t)
	r := start(t, p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "ls /proc | grep -c '^[0-9]'; kill -0 " + strconv.Itoa(os.Getpid()) + " 2>/dev/null && echo reached"}})
	r.wait(t)
	lines := strings.Fields(r.out())
	if len(lines) != 1 {
		t.Fatalf("the exec could signal pid %d: %q", os.Getpid(), r.out())
	}
	if n, _ := strconv.Atoi(lines[0]); n > 4 { // bwrap's pid 1, sh, ls, grep
		t.Fatalf("the exec sees %d processes", n)
	}
}

// isolatedSandbox is a sandbox whose execs must run in pid namespaces of
// their own. Where bwrap is installed and they do not, the test fails
// without running anything hostile.
func isolatedSandbox(t *testing.T) (provider.Provider, string, string) {
	t.Helper()
	if !bwrapInstalled() {
		t.Skip("bwrap is not installed: local runs execs unisolated, and a hostile command could kill this test")
	}
	p, id, root := sandbox(t, protocol.Spec{})
	self, err := os.ReadFile("/proc/self/cmdline")
	must(t, err)
	r := start(t, p, id, provider.ExecRequest{Argv: []string{"sh", "-c", fmt.Sprintf("cat /proc/%d/cmdline 2>/dev/null || true", os.Getpid())}})
	r.wait(t)
	if bytes.Equal([]byte(r.out()), self) {
		t.Fatal("bwrap is installed, yet an exec sees this test's own process: execs are not in pid namespaces of their own")
	}
	return p, id, root
}

// awaitNothingIn waits until no live process works in root, but for the
// sandbox's init (the keeper), which lives until terminate.
func awaitNothingIn(t *testing.T, root string) {
	t.Helper()
	var left []int
	deadline := time.Now().Add(time.Minute)
	for {
		left = processesIn(root)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes still work in the sandbox after the kill: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func processesIn(root string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		if worksIn(pid, root) && !sandboxInit(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// sandboxInit reports whether pid is pid 1 of a pid namespace below the
// host's: an isolated sandbox's keeper.
func sandboxInit(pid int) bool {
	status, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "NSpid:" {
			return f[len(f)-1] == "1"
		}
	}
	return false
}

// uniqueSleeps counts live "sleep 2000.4242" processes, an argument only
// this test uses.
func uniqueSleeps() int {
	n := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		if cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline"); string(cmdline) == "sleep\x002000.4242\x00" {
			n++
		}
	}
	return n
}

// TestExclusiveStopsWhatAnEarlierResidentLeft: a service started under an
// earlier resident, which this one holds no handle on, is found by its
// namespace's working directory and stopped before an exclusive exec.
func TestExclusiveStopsWhatAnEarlierResidentLeft(t *testing.T) {
	if !bwrapInstalled() {
		t.Skip("bwrap is not installed: local refuses exclusive execs")
	}
	state := t.TempDir()
	earlier := open(t, state)
	id, err := earlier.Create(context.Background(), protocol.Spec{}, owner, nil)
	must(t, err)
	root := state + "/local/sandboxes/" + id + "/root"
	r := start(t, earlier, id, provider.ExecRequest{Argv: []string{"sh", "-c", "(cd /; exec sleep 2000.4242) >/dev/null 2>&1 & echo started"}})
	r.wait(t)
	must(t, earlier.Close())
	await(t, func() bool { return uniqueSleeps() == 1 }) // the service runs

	later := open(t, state)
	t.Cleanup(func() { later.Terminate(context.Background(), id) })
	grader := start(t, later, id, provider.ExecRequest{Argv: []string{"sh", "-c", "echo graded"}, Exclusive: true})
	if st := grader.wait(t); st.Code != 0 || grader.out() != "graded\n" {
		t.Fatalf("exclusive exec: %+v, %q", st, grader.out())
	}
	if n := uniqueSleeps(); n != 0 {
		t.Fatalf("%d services of the earlier resident ran beside the exclusive exec", n)
	}
	if left := processesIn(root); len(left) != 0 {
		t.Fatalf("processes still work in the sandbox: %v", left)
	}
}

// TestAServiceCannotWriteIntoAnExclusiveExecsStreams: a loop left by one
// exec writes into every stdout and stderr it can find in /proc. The execs
// of a sandbox share its pid namespace, as on Docker, so an exclusive exec
// (a grader) is what gets only its own output: the loop is gone before it
// starts, wherever it hid.
func TestAServiceCannotWriteIntoAnExclusiveExecsStreams(t *testing.T) {
	p, id, root := isolatedSandbox(t)
	forger := `trap '' PIPE; exec >/dev/null 2>&1; while :; do
  for f in /proc/[0-9]*/fd/1 /proc/[0-9]*/fd/2; do (printf FORGED > "$f") 2>/dev/null; done
  echo x >> beats; sleep 0.02
done`
	start(t, p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "(" + forger + ") &"}}).wait(t)
	await(t, func() bool { b, _ := os.ReadFile(root + "/beats"); return bytes.Count(b, []byte("\n")) >= 5 })
	r := start(t, p, id, provider.ExecRequest{Argv: []string{"sh", "-c", `n=$(wc -l < beats); sleep 0.3; [ $(wc -l < beats) -eq $n ] && echo mine`}, Exclusive: true})
	st := r.wait(t)
	r.mu.Lock()
	out, errOut := r.stdout.String(), r.stderr.String()
	r.mu.Unlock()
	if st.Code != 0 || out != "mine\n" || errOut != "" {
		t.Fatalf("exec beside a forging loop: %+v, stdout %q, stderr %q; want only its own output", st, out, errOut)
	}
}
