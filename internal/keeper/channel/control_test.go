package channel

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// gone waits until pid no longer runs (reaped, or a zombie nobody will
// wait for); the deadline only bounds a test that would otherwise hang.
func gone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still runs", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readPIDs reads n lines of pids the command prints first.
func readPIDs(t *testing.T, r *bufio.Reader, n int) []int {
	t.Helper()
	var pids []int
	for range n {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil {
			t.Fatalf("pid line %q", line)
		}
		pids = append(pids, pid)
	}
	return pids
}

// Kill takes the whole tree, background children included.
func TestKillTakesTheTree(t *testing.T) {
	c, _ := openStdio(t)
	e, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"sh", "-c", "sleep 1000 & echo $!; sleep 1000 & echo $!; echo $$; wait"}, Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(e.Stdout())
	pids := readPIDs(t, out, 3)
	if err := e.Kill(); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, out)
	go io.Copy(io.Discard, e.Stderr())
	st, err := e.Wait()
	if err != nil || !st.Killed || st.Code != 137 {
		t.Fatalf("wait: %+v %v", st, err)
	}
	for _, pid := range pids {
		gone(t, pid)
	}
}

// A channel that breaks kills the trees of the execs it started.
func TestBrokenChannelKillsItsExecs(t *testing.T) {
	c, _ := openStdio(t)
	e, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"sh", "-c", "sleep 1000 & echo $!; echo $$; wait"}, Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	pids := readPIDs(t, bufio.NewReader(e.Stdout()), 2)
	c.Close()
	if _, err := e.Wait(); !errors.Is(err, ErrBroken) {
		t.Fatalf("wait on a closed channel: %v", err)
	}
	if _, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"true"}}); !errors.Is(err, ErrBroken) {
		t.Fatalf("exec on a closed channel: %v", err)
	}
	for _, pid := range pids {
		gone(t, pid)
	}
}

func TestSignalReachesTheCommand(t *testing.T) {
	c, _ := openStdio(t)
	e, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"sh", "-c", `trap 'echo got; exit 7' USR1; echo ready; while :; do sleep 0.05; done`}, Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(e.Stdout())
	if line, _ := out.ReadString('\n'); line != "ready\n" {
		t.Fatalf("first line %q", line)
	}
	if err := e.Signal("SIGNOPE"); err == nil {
		t.Fatal("an unknown signal was sent")
	}
	if err := e.Signal("USR1"); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(out)
	st, err := e.Wait()
	if err != nil || st.Code != 7 || string(rest) != "got\n" {
		t.Fatalf("after the signal: %q %+v %v", rest, st, err)
	}
	// A command killed by a signal says which.
	r := run(t, c, ExecSpec{Argv: []string{"sh", "-c", "kill -TERM $$"}})
	if r.status.Code != 128+int(syscall.SIGTERM) || r.status.Signal != "SIGTERM" || r.status.Killed {
		t.Fatalf("self-terminated: %+v", r.status)
	}
}

// The keeper holds the deadline: the tree dies then, reported as timed out.
func TestDeadlineKillsTheTree(t *testing.T) {
	c, _ := openStdio(t)
	r := run(t, c, ExecSpec{Argv: []string{"sleep", "1000"}, Deadline: time.Now().Add(100 * time.Millisecond)})
	if !r.status.TimedOut || !r.status.Killed {
		t.Fatalf("status %+v", r.status)
	}
}

// An exclusive exec kills every other exec first, and nothing outside its
// keeper's sandbox: a process of this machine that carries a mark (as every
// exec of every local sandbox here does) lives on.
func TestExclusiveKillsTheOthers(t *testing.T) {
	bystander := startMarkedBystander(t)
	c, _ := openOn(t, startStdioInPidNS(t))
	other, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"sh", "-c", "echo up; sleep 1000"}, Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(other.Stdout())
	if line, _ := out.ReadString('\n'); line != "up\n" {
		t.Fatalf("other: %q", line)
	}
	r := run(t, c, ExecSpec{Argv: []string{"echo", "alone"}, Exclusive: true})
	if r.stdout != "alone\n" {
		t.Fatalf("exclusive: %+v", r)
	}
	go io.Copy(io.Discard, out)
	go io.Copy(io.Discard, other.Stderr())
	if st, err := other.Wait(); err != nil || !st.Killed {
		t.Fatalf("the other exec: %+v %v", st, err)
	}
	if bystander != nil {
		// The sweep is over (the exclusive exec ran after it): a process
		// it reached would be dead or dying by now.
		if err := bystander.Process.Signal(syscall.Signal(0)); err != nil {
			t.Fatalf("a marked process outside the keeper's sandbox: %v", err)
		}
		if data, err := os.ReadFile("/proc/" + strconv.Itoa(bystander.Process.Pid) + "/stat"); err != nil || strings.Contains(string(data[strings.LastIndexByte(string(data), ')')+1:]), " Z ") {
			t.Fatalf("a marked process outside the keeper's sandbox was killed: %q %v", data, err)
		}
	}
}

// A keeper that is not pid 1 of a namespace of its own (run by hand, or
// by a provider that got it wrong) sees a wider world's /proc: its
// exclusive sweep kills its own execs' processes, never another marked
// process of the machine.
func TestExclusiveOutsideItsPidNamespaceSparesStrangers(t *testing.T) {
	bystander := startMarkedBystander(t)
	if bystander == nil {
		t.Skip("not root: no process can be given a mark, and an unprotected keeper kills only its own trees")
	}
	c, _ := openStdio(t)
	other, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"sh", "-c", "echo up; sleep 1000"}, Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(other.Stdout())
	if line, _ := out.ReadString('\n'); line != "up\n" {
		t.Fatalf("other: %q", line)
	}
	if r := run(t, c, ExecSpec{Argv: []string{"echo", "alone"}, Exclusive: true}); r.stdout != "alone\n" {
		t.Fatalf("exclusive: %+v", r)
	}
	go io.Copy(io.Discard, out)
	go io.Copy(io.Discard, other.Stderr())
	if st, err := other.Wait(); err != nil || !st.Killed {
		t.Fatalf("the keeper's own other exec: %+v %v", st, err)
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(bystander.Process.Pid) + "/stat")
	if err != nil || strings.Contains(string(data[strings.LastIndexByte(string(data), ')')+1:]), " Z ") {
		t.Fatalf("a marked process of another sandbox was killed: %q %v", data, err)
	}
}

// startMarkedBystander starts, as root, a process of this machine with an
// exec's mark among its groups, outside any keeper: what a local sandbox's
// exec looks like from here. nil when not root (no mark can be set).
func startMarkedBystander(t *testing.T) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	mark, _ := keeperproto.Mark("5eed0b5")
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{mark}}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// A reader that stops reading one exec stalls that exec only: the keeper
// stops reading its pipe once the credit is spent, and the other exec on
// the same channel streams to its end.
func TestStalledReaderStallsOnlyItsExec(t *testing.T) {
	c, _ := openStdio(t)
	// Writes 64 MiB unless stalled; prints "done" to stderr after.
	stalled, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"sh", "-c", "head -c 67108864 /dev/zero; echo done >&2"}, Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, c, ExecSpec{Argv: []string{"sh", "-c", "head -c 16777216 /dev/zero | wc -c"}})
	if strings.TrimSpace(r.stdout) != "16777216" {
		t.Fatalf("the other exec: %+v", r)
	}
	// The stalled one has not finished: its stderr has nothing yet.
	select {
	case <-stalled.st.exited:
		t.Fatal("the stalled exec ended while nobody read it")
	default:
	}
	n, err := io.Copy(io.Discard, stalled.Stdout())
	if err != nil || n != 64<<20 {
		t.Fatalf("stalled exec's output: %d %v", n, err)
	}
	if b, _ := io.ReadAll(stalled.Stderr()); string(b) != "done\n" {
		t.Fatalf("stderr %q", b)
	}
	if st, err := stalled.Wait(); err != nil || st.Code != 0 {
		t.Fatalf("%+v %v", st, err)
	}
}

// waitFor polls cond until it holds; the bound only stops a hung test.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// -lifetime ends the keeper, and with it the sandbox, by itself.
func TestLifetimeEndsTheKeeper(t *testing.T) {
	cmd := exec.Command(keeperBin, "serve", "-stdio", "-lifetime", "1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("keeper after its lifetime: %v", err)
	}
}
