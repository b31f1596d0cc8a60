package channel

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// A keeper that is not root with the sandbox's capabilities runs
// unprotected (as a test as non-root does): the protocol works, the tree
// kill and exclusive find processes by parentage instead of marks, and a
// user switch is refused with its reason.
func TestUnprotectedKeeper(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("already unprotected: every other test covers this")
	}
	cmd := exec.Command(keeperBin, "serve", "-stdio")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Dir = "/"
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	c, err := Open(ctx(t), pipeRW{Reader: out, WriteCloser: stdin, rc: out}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Protected() {
		t.Fatal("a keeper running as nobody says it is protected")
	}
	if r := run(t, c, ExecSpec{Argv: []string{"id", "-u"}}); r.stdout != "65534\n" {
		t.Fatalf("id: %+v", r)
	}
	e, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"sh", "-c", "sleep 1000 & echo $!; echo $$; wait"}, Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	outR := bufio.NewReader(e.Stdout())
	pids := readPIDs(t, outR, 2)
	if r := run(t, c, ExecSpec{Argv: []string{"true"}, Exclusive: true}); r.status.Code != 0 {
		t.Fatalf("exclusive: %+v", r)
	}
	go io.Copy(io.Discard, outR)
	go io.Copy(io.Discard, e.Stderr())
	if st, err := e.Wait(); err != nil || !st.Killed {
		t.Fatalf("the exec beside the exclusive one: %+v %v", st, err)
	}
	for _, pid := range pids {
		gone(t, pid)
	}
	_, err = c.Exec(ctx(t), ExecSpec{Argv: []string{"true"}, Env: testEnv, User: "0"})
	var se *StartError
	if !asStartError(err, &se) || se.Reason != ReasonPermissionDenied || se.Field != "user" {
		t.Fatalf("user switch unprotected: %v", err)
	}
}

func asStartError(err error, se **StartError) bool {
	e, ok := err.(*StartError)
	*se = e
	return ok
}
