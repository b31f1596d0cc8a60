package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/resident-dev/resident/internal/testhost"
)

// These drive the real residentctl on a pseudo-terminal the test opens, as
// a person's shell would run it, against the local provider (which
// announces tty under bubblewrap).

// pty is a pseudo-terminal: the test holds the master, residentctl gets
// the slave as its stdin, stdout, stderr and controlling terminal.
type pty struct {
	master, slave *os.File
	out           *testhost.SyncBuffer // everything residentctl wrote
	closed        chan struct{}        // the copy of out ended
}

func openPTY(t *testing.T, rows, cols uint16) *pty {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := &pty{master: master, slave: slave, out: &testhost.SyncBuffer{}, closed: make(chan struct{})}
	p.resize(t, rows, cols)
	go func() {
		defer close(p.closed)
		_, _ = io.Copy(p.out, master) // ends with EIO once the master is closed
	}()
	t.Cleanup(func() {
		_ = slave.Close()
		_ = master.Close()
		<-p.closed
	})
	return p
}

// resize sets the terminal's size; the kernel sends SIGWINCH to its
// foreground process group (residentctl).
func (p *pty) resize(t *testing.T, rows, cols uint16) {
	t.Helper()
	if err := unix.IoctlSetWinsize(int(p.master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		t.Fatal(err)
	}
}

// termios is the terminal's mode as residentctl sees it.
func (p *pty) termios(t *testing.T) unix.Termios {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(p.slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return *tio
}

// type sends keys as a person at the terminal would.
func (p *pty) typ(t *testing.T, keys string) {
	t.Helper()
	if _, err := p.master.Write([]byte(keys)); err != nil {
		t.Fatal(err)
	}
}

// await waits for want in what residentctl wrote. ctlLimit bounds the wait
// so a hang fails with the output; it is not a performance assertion.
func (p *pty) await(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(ctlLimit)
	for !strings.Contains(p.out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q on the terminal after %s; it shows %q", want, ctlLimit, p.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// drain waits until everything written to the terminal so far (all of
// residentctl's output, once it has exited) has been read from it: a
// marker written behind it comes back last.
func (p *pty) drain(t *testing.T) string {
	t.Helper()
	const marker = "\n[drained]"
	if _, err := p.slave.Write([]byte(marker)); err != nil {
		t.Fatal(err)
	}
	p.await(t, "[drained]")
	return p.out.String()
}

const ctlLimit = 60 * time.Second

// ctlOnTerminal starts residentctl with the pty as its controlling
// terminal, in a session of its own (as a login shell's job would be).
func ctlOnTerminal(t *testing.T, p *pty, state string, args ...string) *exec.Cmd {
	t.Helper()
	full := append([]string{"--state-dir", state, "--install-id", "ctl-" + strings.ReplaceAll(t.Name(), "/", "-")}, args...)
	cmd := exec.Command(ctlBin, full...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.slave, p.slave, p.slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// wait is residentctl's exit code.
func wait(t *testing.T, p *pty, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(ctlLimit):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("residentctl %q did not finish; the terminal shows %q", cmd.Args, p.out.String())
	}
	return cmd.ProcessState.ExitCode()
}

func ttySandbox(t *testing.T, state string) string {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("local announces tty only under bubblewrap")
	}
	id := keptSandbox(t, state)
	t.Cleanup(func() { ctl(t, state, nil, "rm", id) })
	return id
}

// exec -it: the size at start and after a resize reach the command, keys
// go to it as bytes (the local terminal is raw while it runs), its exit
// code is residentctl's, and the terminal is as it was afterwards.
func TestExecTerminalSizeResizeKeysAndExitCode(t *testing.T) {
	state := t.TempDir()
	id := ttySandbox(t, state)
	p := openPTY(t, 30, 100)
	before := p.termios(t)
	// The command polls its own size, inside the sandbox, until the
	// resize arrives; then it reads five raw bytes.
	script := `stty size; while [ "$(stty size)" != "40 120" ]; do sleep 0.05; done; echo resized; ` +
		`stty raw -echo; echo ready; head -c 5 | od -An -tx1; exit 42`
	cmd := ctlOnTerminal(t, p, state, "exec", "-it", id, "--", "sh", "-c", script)
	p.await(t, "30 100")
	if raw := p.termios(t); raw.Lflag&(unix.ICANON|unix.ISIG|unix.ECHO) != 0 {
		t.Errorf("the local terminal is not raw while the command runs: lflag %#x", raw.Lflag)
	}
	p.resize(t, 40, 120)
	p.await(t, "ready")
	// Ctrl-C, Ctrl-D, Ctrl-Z, CR and a byte of a UTF-8 character: none is
	// a signal, an end of file or a translation on residentctl's side.
	p.typ(t, "\x03\x04\x1a\r\xc3")
	if code := wait(t, p, cmd); code != 42 {
		t.Fatalf("exit %d, want the command's 42; the terminal shows %q", code, p.drain(t))
	}
	if out := p.drain(t); !strings.Contains(out, "resized") || !strings.Contains(out, "03 04 1a 0d c3") {
		t.Fatalf("the terminal shows %q", out)
	}
	if after := p.termios(t); after != before {
		t.Fatalf("the terminal was not restored:\nbefore %+v\nafter  %+v", before, after)
	}
}

// Ctrl-C at the terminal interrupts the remote command (as a signal of
// its own terminal), not residentctl: a trap in the command sees it, and
// a plain sleep ends with 130 as it would in a local shell.
func TestExecTerminalCtrlCInterruptsTheCommand(t *testing.T) {
	state := t.TempDir()
	id := ttySandbox(t, state)
	p := openPTY(t, 24, 80)
	before := p.termios(t)
	cmd := ctlOnTerminal(t, p, state, "exec", "-it", id, "--", "sh", "-c", `trap 'echo caught; exit 42' INT; echo ready; sleep 600 & wait`)
	p.await(t, "ready")
	p.typ(t, "\x03")
	if code, out := wait(t, p, cmd), p.drain(t); code != 42 || !strings.Contains(out, "caught") {
		t.Fatalf("exit %d, want 42 from the trap; the terminal shows %q", code, out)
	}
	if after := p.termios(t); after != before {
		t.Fatalf("the terminal was not restored:\nbefore %+v\nafter  %+v", before, after)
	}

	p2 := openPTY(t, 24, 80)
	cmd = ctlOnTerminal(t, p2, state, "exec", "-ti", id, "--", "sh", "-c", "echo ready; sleep 600")
	p2.await(t, "ready")
	p2.typ(t, "\x03")
	if code, out := wait(t, p2, cmd), p2.drain(t); code != 130 || strings.Contains(out, "cancelled") {
		t.Fatalf("exit %d, want 130 from the interrupted sleep; the terminal shows %q", code, out)
	}
}

// run -it: a new sandbox with a terminal, the command's exit code kept,
// the sandbox removed and the terminal restored afterwards.
func TestRunTerminal(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("local announces tty only under bubblewrap")
	}
	state := t.TempDir()
	p := openPTY(t, 33, 91)
	before := p.termios(t)
	cmd := ctlOnTerminal(t, p, state, "run", "-it", "--", "sh", "-c", "tty; stty size; read line; echo got:$line; exit 7")
	p.await(t, "33 91")
	p.typ(t, "hello\r")
	if code, out := wait(t, p, cmd), p.drain(t); code != 7 || !strings.Contains(out, "got:hello") || !strings.Contains(out, "/dev/pts/") {
		t.Fatalf("exit %d, want 7; the terminal shows %q", code, out)
	}
	if after := p.termios(t); after != before {
		t.Fatalf("the terminal was not restored:\nbefore %+v\nafter  %+v", before, after)
	}
	ctl(t, state, nil, "ls", "--json").want(t, 0, "[]\n")
}

// -t needs a terminal on stdin, as docker's; -i alone streams stdin with
// no terminal.
func TestTerminalRefusedWithoutOne(t *testing.T) {
	state := t.TempDir()
	for _, args := range [][]string{{"run", "-it", "--", "true"}, {"exec", "-t", "lcl-0000000000000000", "--", "true"}} {
		r := ctl(t, state, []byte("piped"), args...)
		if r.code != exitUsage || !strings.Contains(string(r.stderr), "not a TTY") {
			t.Errorf("%q: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	ctl(t, state, []byte("piped"), "run", "-i", "--", "sh", "-c", "cat; tty || true").want(t, 0, "pipednot a tty\n")
}
