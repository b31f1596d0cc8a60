package channel

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// keeperBin is the keeper built from this tree's sources, once, for every
// test: the protocol tests run it as a real child process.
var keeperBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "channel-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = os.Chmod(dir, 0o755) // TestUnprotectedKeeper runs it as nobody
	keeperBin = filepath.Join(dir, "keeper")
	build := exec.Command("go", "build", "-o", keeperBin, "github.com/resident-dev/resident/internal/keeper/cmd/keeper")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build keeper: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// stdioKeeper is a "keeper serve -stdio" child: its stdin and stdout are
// the test's to wire.
type stdioKeeper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   io.ReadCloser
}

func startStdio(t *testing.T) *stdioKeeper {
	t.Helper()
	return startStdioEnv(t, nil)
}

// startStdioEnv starts the keeper with env as its environment (nil: the
// test's).
func startStdioEnv(t *testing.T, env []string) *stdioKeeper {
	t.Helper()
	cmd := exec.Command(keeperBin, "serve", "-stdio")
	cmd.Env = env
	return startStdioCmd(t, cmd)
}

// startStdioInPidNS is startStdio with the keeper as pid 1 of a pid
// namespace (and /proc) of its own, as every sandbox's keeper is, for a
// test of what the keeper does to every process it can see: a protected
// keeper's exclusive exec kills every marked process in its /proc, and on
// this machine's /proc that is every exec of every local sandbox of every
// other test and resident (issue 16's restart flake: a detached exec
// killed with SIGKILL mid-command). Unprotected (not root), the keeper
// kills only its own execs' trees, so it needs no namespace.
func startStdioInPidNS(t *testing.T) *stdioKeeper {
	t.Helper()
	if os.Geteuid() != 0 {
		return startStdio(t)
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare (util-linux) is not installed: a protected keeper outside a pid namespace would kill every marked process of this machine")
	}
	k := startStdioCmd(t, exec.Command(unshare, "--pid", "--fork", "--kill-child", "--mount-proc", keeperBin, "serve", "-stdio"))
	// Before startStdioCmd's cleanup (they run last first): the keeper
	// changed its uid, which clears the parent-death signal --kill-child
	// gave it, so it outlives unshare unless killed itself (pid 1 of the
	// namespace: everything in it dies too).
	t.Cleanup(func() {
		pid := strconv.Itoa(k.cmd.Process.Pid)
		children, _ := os.ReadFile("/proc/" + pid + "/task/" + pid + "/children")
		for _, f := range strings.Fields(string(children)) {
			if child, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(child, syscall.SIGKILL)
			}
		}
	})
	return k
}

func startStdioCmd(t *testing.T, cmd *exec.Cmd) *stdioKeeper {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return &stdioKeeper{cmd: cmd, stdin: stdin, out: out}
}

type pipeRW struct {
	io.Reader
	io.WriteCloser
	rc io.Closer
}

func (p pipeRW) Close() error {
	err := p.WriteCloser.Close()
	if p.rc != nil {
		_ = p.rc.Close()
	}
	return err
}

// openStdio starts a keeper and opens the channel over its stdio.
func openStdio(t *testing.T) (*Conn, *stdioKeeper) {
	t.Helper()
	return openOn(t, startStdio(t))
}

func openOn(t *testing.T, k *stdioKeeper) (*Conn, *stdioKeeper) {
	t.Helper()
	c, err := Open(ctx(t), pipeRW{Reader: k.out, WriteCloser: k.stdin, rc: k.out}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, k
}

// socketKeeper is a "keeper serve -listen-fd 3" child, as the local
// provider runs it: every Open dials a new connection.
type socketKeeper struct {
	path string
}

func startSocket(t *testing.T) *socketKeeper {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keeper.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := l.File()
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false) // the keeper's copy goes on listening there
	l.Close()
	cmd := exec.Command(keeperBin, "serve", "-listen-fd", "3")
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stderr = testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return &socketKeeper{path: path}
}

func (k *socketKeeper) open(t *testing.T) *Conn {
	t.Helper()
	nc, err := net.Dial("unix", k.path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Open(ctx(t), nc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("keeper: %s", p)
	return len(p), nil
}
