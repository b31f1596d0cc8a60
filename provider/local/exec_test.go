package local_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

type run struct {
	proc           provider.Process
	stdout, stderr strings.Builder
	mu             sync.Mutex
	readers        sync.WaitGroup
}

func start(t *testing.T, p provider.Provider, id string, req provider.ExecRequest) *run {
	return startCtx(t, context.Background(), p, id, req)
}

func startCtx(t *testing.T, c context.Context, p provider.Provider, id string, req provider.ExecRequest) *run {
	t.Helper()
	proc, err := p.Exec(c, id, req)
	must(t, err)
	r := &run{proc: proc}
	r.readers.Add(2)
	for _, s := range []struct {
		src io.Reader
		dst *strings.Builder
	}{{proc.Stdout(), &r.stdout}, {proc.Stderr(), &r.stderr}} {
		go func() {
			defer r.readers.Done()
			buf := make([]byte, 4096)
			for {
				n, err := s.src.Read(buf)
				r.mu.Lock()
				s.dst.Write(buf[:n])
				r.mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	return r
}

func (r *run) out() string { r.mu.Lock(); defer r.mu.Unlock(); return r.stdout.String() }

func (r *run) wait(t *testing.T) provider.ExitStatus {
	t.Helper()
	done := make(chan provider.ExitStatus, 1)
	go func() { st, _ := r.proc.Wait(); r.readers.Wait(); done <- st }()
	select {
	case st := <-done:
		return st
	case <-time.After(time.Minute):
		t.Fatal("exec did not end")
		return provider.ExitStatus{}
	}
}

func sandbox(t *testing.T, spec protocol.Spec) (provider.Provider, string, string) {
	state := t.TempDir()
	p := open(t, state)
	id, err := p.Create(context.Background(), spec, owner, nil)
	must(t, err)
	t.Cleanup(func() { p.Terminate(context.Background(), id) })
	return p, id, filepath.Join(state, "local", "sandboxes", id, "root")
}

// TestEnvIsExactlyPathAndHome: with no env asked for, a process sees PATH
// and HOME (the sandbox root: "/" when isolated) and nothing else of the resident's.
func TestEnvIsExactlyPathAndHome(t *testing.T) {
	p, id, root := sandbox(t, protocol.Spec{})
	r := start(t, p, id, provider.ExecRequest{Argv: []string{"env"}})
	r.wait(t)
	got := strings.Split(strings.TrimSpace(r.out()), "\n")
	slices.Sort(got)
	want := []string{"HOME=" + root, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if bwrapInstalled() {
		// The sandbox root is "/" in its own view; the keeper adds
		// nothing (bwrap, which sets PWD, no longer starts the exec).
		want = []string{"HOME=/", want[1]}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("env = %q, want %q", got, want)
	}
}

// TestLateReaderGetsBufferedOutput: Wait returns after the grace although
// a background child holds stdout and nobody read yet; what the main
// process wrote is still all there for the reader.
func TestLateReaderGetsBufferedOutput(t *testing.T) {
	p, id, _ := sandbox(t, protocol.Spec{})
	proc, err := p.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"sh", "-c", "sleep 300 & head -c 60000 /dev/zero; echo end"}})
	must(t, err)
	st, err := proc.Wait()
	must(t, err)
	read := make(chan []byte, 1)
	go func() {
		data, _ := io.ReadAll(proc.Stdout())
		_, _ = io.ReadAll(proc.Stderr())
		read <- data
	}()
	var data []byte
	select {
	case data = <-read:
	case <-time.After(time.Minute):
		t.Fatal("stdout did not end after Wait returned")
	}
	if st.Code != 0 || len(data) != 60004 || !strings.HasSuffix(string(data), "end\n") {
		t.Fatalf("exit %d, %d bytes; want 0 and 60004", st.Code, len(data))
	}
}

// TestCancelKillsSetsidChild checks from the host's /proc that a child
// that left the process group dies with the exec.
func TestCancelKillsSetsidChild(t *testing.T) {
	p, id, root := sandbox(t, protocol.Spec{})
	c, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := startCtx(t, c, p, id, provider.ExecRequest{Argv: []string{"sh", "-c", `setsid sh -c 'trap "" TERM; echo $$; exec sleep 300' & wait`}})
	await(t, func() bool { return strings.HasSuffix(r.out(), "\n") })
	pid := hostPID(t, root, r.out())
	if pgid, _ := syscall.Getpgid(pid); pgid != pid {
		t.Fatalf("child %d did not leave the exec's process group (pgid %d)", pid, pgid)
	}
	cancel()
	if st := r.wait(t); st.Code != 137 || st.Signal != "SIGKILL" {
		t.Errorf("killed exec: %+v, want 137 SIGKILL", st)
	}
	await(t, func() bool { return !alive(pid) })
}

// TestTerminateKillsOrphans: a double-forked process whose parent exited
// is no one's descendant any more; Terminate finds it by its working
// directory.
func TestTerminateKillsOrphans(t *testing.T) {
	p, id, root := sandbox(t, protocol.Spec{})
	r := start(t, p, id, provider.ExecRequest{Argv: []string{"sh", "-c", `(setsid sleep 300 >/dev/null 2>&1 & echo $!)`}})
	r.wait(t)
	pid := hostPID(t, root, r.out())
	if !alive(pid) {
		t.Fatal("orphan not running before terminate")
	}
	existed, err := p.Terminate(context.Background(), id)
	if err != nil || !existed {
		t.Fatalf("Terminate = %v, %v", existed, err)
	}
	await(t, func() bool { return !alive(pid) })
}

// hostPID turns the pid a sandbox process printed, which is its pid in the
// exec's own pid namespace when local isolates, into its pid on the host:
// the process working in root whose innermost NSpid it is.
func hostPID(t *testing.T, root, printed string) int {
	t.Helper()
	nspid := strings.TrimSpace(printed)
	if _, err := strconv.Atoi(nspid); err != nil {
		t.Fatalf("not a pid: %q", printed)
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, _ := os.ReadFile("/proc/" + e.Name() + "/status")
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "NSpid:" && f[len(f)-1] == nspid && worksIn(pid, root) {
				return pid
			}
		}
	}
	t.Fatalf("no process %s works in %s", nspid, root)
	return 0
}

// worksIn reports whether the process runs in the sandbox whose root is
// root: unisolated it works below it, isolated it has it as its root (its
// working directory reads in the sandbox's own terms).
func worksIn(pid int, root string) bool {
	proc := "/proc/" + strconv.Itoa(pid)
	if cwd, err := os.Readlink(proc + "/cwd"); err == nil && (cwd == root || strings.HasPrefix(cwd, root+"/")) {
		return true
	}
	a, errA := os.Stat(proc + "/root")
	b, errB := os.Stat(root)
	return errA == nil && errB == nil && os.SameFile(a, b)
}

// bwrapInstalled says whether local should run execs in pid namespaces:
// it does wherever bwrap is installed (tests/run installs it).
func bwrapInstalled() bool {
	_, err := exec.LookPath("bwrap")
	return err == nil
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func await(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Isolated, the keeper holds an exec's deadline: one that passed while it
// started runs the command and kills it at once, with no resident timer.
func TestExecDeadlinePassedBeforeTheStartKills(t *testing.T) {
	if !bwrapInstalled() {
		t.Skip("unisolated, the deadline is the resident's timer alone")
	}
	p, id, _ := sandbox(t, protocol.Spec{})
	r := start(t, p, id, provider.ExecRequest{Argv: []string{"sleep", "300"}, Deadline: time.Now().Add(-time.Second)})
	if st := r.wait(t); st.Code != 137 || st.Signal != "SIGKILL" {
		t.Fatalf("exec past its deadline: %+v", st)
	}
}
