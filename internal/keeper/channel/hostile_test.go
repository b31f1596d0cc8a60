package channel

import (
	"bytes"
	"errors"
	"strings"
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
