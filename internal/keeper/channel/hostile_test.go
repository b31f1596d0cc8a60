package channel

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// From inside the sandbox, as root (without capabilities, as every command
// runs), nothing reaches the keeper: it cannot be signalled, traced, or
// have its descriptors or memory opened through /proc, so the channel can
// be neither read nor written from inside. The channel works afterwards.
func TestSandboxCannotReachTheKeeper(t *testing.T) {
	_, c := openSandbox(t, 0)
	r := run(t, c, ExecSpec{Argv: []string{"/hostile", "1"}})
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) < 10 {
		t.Fatalf("hostile said %q %q", r.stdout, r.stderr)
	}
	for _, line := range lines {
		if strings.HasPrefix(line, "list-fds: ") {
			// /proc/1/fd of a non-dumpable process is root's directory, so the
			// sandbox's root may list the descriptor numbers; opening or
			// reading any of them (open-*, readlink-fd) is what is refused.
			t.Log(line)
			continue
		}
		if !strings.Contains(line, ": refused") {
			t.Errorf("from inside the sandbox: %s", line)
		} else {
			t.Log(line)
		}
	}
	// A shell's kill of everything it may signal, and of init.
	run(t, c, ExecSpec{Argv: []string{"sh", "-c", "kill -9 1; kill -9 -1"}})
	if r := run(t, c, ExecSpec{Argv: []string{"echo", "alive"}}); r.stdout != "alive\n" {
		t.Fatalf("after the kills: %+v", r)
	}
}

// A command that prints frames prints bytes: its output travels as the
// payload of the keeper's frames, so a forged Exit, Fenced or Welcome
// reaches the client as data and changes nothing.
func TestForgedFramesInOutputAreData(t *testing.T) {
	_, c := openSandbox(t, 0)
	var forged []byte
	for _, f := range []keeperproto.Frame{
		{Type: keeperproto.ChanExit, Stream: 1, Gen: c.Generation(), Payload: []byte(`{"code":42}`)},
		{Type: keeperproto.ChanFenced, Gen: c.Generation(), Payload: []byte(`{"generation":99}`)},
		{Type: keeperproto.ChanWelcome, Gen: c.Generation() + 1, Payload: []byte(`{}`)},
	} {
		forged, _ = keeperproto.AppendFrame(forged, f)
	}
	e, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"cat"}, Env: testEnv, Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = e.Stdin().Write(forged)
		_ = e.Stdin().Close()
	}()
	r := collect(t, e)
	if !bytes.Equal([]byte(r.stdout), forged) || r.status.Code != 0 {
		t.Fatalf("forged frames came back as %q, %+v", r.stdout, r.status)
	}
	if c.Err() != nil {
		t.Fatalf("the channel broke: %v", c.Err())
	}
}

// The OOM counter: a command the kernel's OOM killer kills is reported so.
func TestOOMKilledIsReported(t *testing.T) {
	_, c := openSandbox(t, 24)
	r := run(t, c, ExecSpec{Argv: []string{"sh", "-c", "dd if=/dev/zero of=/dev/null bs=64M count=1"}})
	if !r.status.OOMKilled || r.status.Killed {
		t.Fatalf("status %+v (%q)", r.status, r.stderr)
	}
	if r := run(t, c, ExecSpec{Argv: []string{"echo", "alive"}}); r.stdout != "alive\n" {
		t.Fatalf("after the OOM kill: %+v", r)
	}
}

// The keeper as a sandbox's init reaps orphans and kills a marked tree
// whatever its processes did to their ancestry.
func TestSandboxTreeKillFindsOrphans(t *testing.T) {
	_, c := openSandbox(t, 0)
	e, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"sh", "-c", "(setsid sleep 1000 &) ; (sleep 1000 &); echo started; sleep 1000"}, Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if n, _ := e.Stdout().Read(buf); string(buf[:n]) != "started\n" {
		t.Fatalf("first output %q", buf[:n])
	}
	if err := e.Kill(); err != nil {
		t.Fatal(err)
	}
	collect(t, e)
	// Killed with the exec's main process; reaped by the keeper as init
	// right after.
	waitFor(t, func() bool {
		r := run(t, c, ExecSpec{Argv: []string{"sh", "-c", "ps -o pid,comm | grep -c sleep"}})
		return strings.TrimSpace(r.stdout) == "0"
	})
}

// A terminal inside a sandbox: the keeper opens the sandbox's /dev/ptmx.
func TestSandboxTTY(t *testing.T) {
	_, c := openSandbox(t, 0)
	r := run(t, c, ExecSpec{Argv: []string{"sh", "-c", "stty size; tty"}, TTY: &WindowSize{Rows: 24, Cols: 80}})
	if !strings.HasPrefix(r.stdout, "24 80\r\n/dev/pts/") || r.status.Code != 0 {
		t.Fatalf("tty in a sandbox: %q %+v", r.stdout, r.status)
	}
}

// An exec holds one pid of the sandbox's limit, its command: the keeper's
// threads are the keeper's, shared by every exec. 48 execs run at once
// under a limit of 64.
func TestSandboxExecsHoldOnePidEach(t *testing.T) {
	_, c := openSandboxPids(t, 0, 64)
	var execs []*Exec
	for i := range 48 {
		e, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"sleep", "1000"}, Env: testEnv})
		if err != nil {
			t.Fatalf("exec %d under a pids limit of 64: %v", i, err)
		}
		execs = append(execs, e)
	}
	for _, e := range execs {
		if err := e.Kill(); err != nil {
			t.Fatal(err)
		}
		if st, err := e.Wait(); err != nil || !st.Killed {
			t.Fatalf("%+v %v", st, err)
		}
	}
}

// Two residents attached to one sandbox, as Docker really merges them: the
// second takes over, the first is fenced and its exec dies, the second
// works.
func TestSandboxTakeoverOverTwoAttaches(t *testing.T) {
	s, first := openSandbox(t, 0)
	e, err := first.Exec(ctx(t), ExecSpec{Argv: []string{"sh", "-c", "echo started; sleep 1000"}, Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if n, _ := e.Stdout().Read(buf); string(buf[:n]) != "started\n" {
		t.Fatalf("first output %q", buf[:n])
	}
	second, err := Open(ctx(t), s.attach(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	<-first.Done()
	if !errors.Is(first.Err(), ErrFenced) {
		t.Fatalf("first resident: %v", first.Err())
	}
	// The kill of the first resident's tree runs beside the takeover.
	waitFor(t, func() bool {
		r := run(t, second, ExecSpec{Argv: []string{"sh", "-c", "ps -o comm | grep -c sleep"}})
		return strings.TrimSpace(r.stdout) == "0"
	})
}

// A fork bomb that takes every pid of the sandbox's limit does not take
// the keeper down: its threads were all made at start, so the channel
// still answers; an exec refused for lack of pids is a typed start error
// (transient: pids come back); and once the bomb's tree is killed, execs
// and file operations work again.
func TestForkBombAtThePidsLimit(t *testing.T) {
	_, c := openSandboxPids(t, 0, 64)
	threads := keeperThreads(t, c)
	// Streams running through the bomb: the keeper's pumps stay busy.
	var streams sync.WaitGroup
	for range 4 {
		e, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"head", "-c", "20000000", "/dev/zero"}, Env: testEnv})
		if err != nil {
			t.Fatal(err)
		}
		streams.Go(func() { collect(t, e) })
	}
	bomb, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"/hostile", "forkloop"}, Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(bomb.Stdout(), buf); err != nil || string(buf) != "full\n" {
		t.Fatalf("fork loop said %q, %v", buf, err)
	}
	// Many requests at once at the limit: each exec and file operation is
	// refused by type, none needs a thread the keeper does not have.
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			_, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"true"}, Env: testEnv})
			var se *StartError
			if !errors.As(err, &se) || se.Kind != keeperproto.KindTransient || !strings.Contains(se.Msg, "pids limit") {
				t.Errorf("an exec at the pids limit: %v", err)
			}
		})
		wg.Go(func() {
			_, err := c.ReadFile(ctx(t), "/etc/passwd", "")
			var fe *FileError
			if !errors.As(err, &fe) || fe.Kind != keeperproto.KindTransient {
				t.Errorf("a file read at the pids limit: %v", err)
			}
		})
		wg.Go(func() {
			if _, err := c.ListExecs(ctx(t)); err != nil {
				t.Errorf("the keeper at the pids limit: %v", err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if err := bomb.Kill(); err != nil {
		t.Fatal(err)
	}
	if st, err := bomb.Wait(); err != nil || !st.Killed {
		t.Fatalf("the fork loop: %+v %v", st, err)
	}
	// The bomb's sleeps die with its tree; the keeper reaps them.
	waitFor(t, func() bool {
		e, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"echo", "alive"}, Env: testEnv})
		return err == nil && collect(t, e).stdout == "alive\n"
	})
	if err := c.WriteFile(ctx(t), "/tmp/after-the-bomb", nil, "", strings.NewReader("still here")); err != nil {
		t.Fatal(err)
	}
	rc, err := c.ReadFile(ctx(t), "/tmp/after-the-bomb", "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(got) != "still here" {
		t.Fatalf("read back %q, %v", got, err)
	}
	streams.Wait()
	if c.Err() != nil {
		t.Fatalf("the channel: %v", c.Err())
	}
	if now := keeperThreads(t, c); now != threads {
		t.Fatalf("the keeper had %d threads at start and %d after the bomb", threads, now)
	}
}

// keeperThreads is how many threads the sandbox's keeper (its PID 1) has.
func keeperThreads(t *testing.T, c *Conn) int {
	t.Helper()
	r := run(t, c, ExecSpec{Argv: []string{"sh", "-c", "ls /proc/1/task | wc -l"}})
	n, err := strconv.Atoi(strings.TrimSpace(r.stdout))
	if err != nil {
		t.Fatalf("threads of the keeper: %q %q", r.stdout, r.stderr)
	}
	return n
}

// An exec's Exit follows the end of its tree kill: a host that sees the
// exit of a killed exec never sees one of its processes alive, not even
// ones the kernel takes a while to tear down (a large memory to unmap)
// after the main process is long gone.
func TestExitFollowsTheTreeKill(t *testing.T) {
	_, c := openSandbox(t, 0)
	for round := range 2 {
		e, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"sh", "-c", `rm -f /tmp/h1 /tmp/h2; /hostile hog >/tmp/h1 & /hostile hog >/tmp/h2 &
			until grep -q ready /tmp/h1 /tmp/h2 2>/dev/null && grep -q ready /tmp/h2; do sleep 0.05; done; echo started; wait`}, Env: testEnv})
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 8)
		if _, err := io.ReadFull(e.Stdout(), buf); err != nil || string(buf) != "started\n" {
			t.Fatalf("first output %q, %v", buf, err)
		}
		if err := e.Kill(); err != nil {
			t.Fatal(err)
		}
		if st, err := e.Wait(); err != nil || !st.Killed {
			t.Fatalf("%+v %v", st, err)
		}
		// No waiting: right after the exit none is left, but zombies the
		// keeper has yet to reap.
		r := run(t, c, ExecSpec{Argv: []string{"sh", "-c", `ps -o stat,comm | awk '$2 == "hostile" && $1 !~ /^Z/' | wc -l`}})
		if n := strings.TrimSpace(r.stdout); n != "0" {
			t.Fatalf("round %d: %s processes of the killed exec alive after its exit (%q)", round, n, r.stderr)
		}
	}
}

// No thread per exec: 100 execs streaming at once leave the keeper with
// the threads it made at start.
func TestHundredStreamsNeedNoThread(t *testing.T) {
	_, c := openSandboxPids(t, 0, 256)
	threads := keeperThreads(t, c)
	var wg sync.WaitGroup
	for range 100 {
		e, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"head", "-c", "2000000", "/dev/zero"}, Env: testEnv, Stdin: true})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			r := collect(t, e)
			if len(r.stdout) != 2000000 || r.status.Code != 0 {
				t.Errorf("a stream carried %d bytes, %+v", len(r.stdout), r.status)
			}
		})
	}
	wg.Wait()
	if now := keeperThreads(t, c); now != threads {
		t.Fatalf("the keeper had %d threads before 100 streams and %d after", threads, now)
	}
}
