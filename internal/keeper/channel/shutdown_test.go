package channel

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// TestShutdownEndsTheSandbox: the keeper as a sandbox's init kills every
// other process (a running exec and what it left in the background)
// before it answers, then exits, which stops the container.
func TestShutdownEndsTheSandbox(t *testing.T) {
	s, c := openSandbox(t, 0)
	// A process outside every exec's tree: started by an exec that ended.
	bg, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"sh", "-c", "sleep 1000 >/dev/null 2>&1 &"}, Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := bg.Wait(); err != nil || st.Code != 0 {
		t.Fatalf("background start: %+v %v", st, err)
	}
	e, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"sh", "-c", "echo up; exec sleep 1000"}, Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	if _, err := io.ReadFull(e.Stdout(), buf); err != nil || string(buf) != "up\n" {
		t.Fatalf("exec output %q %v", buf, err)
	}
	if err := c.Shutdown(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if st, err := e.Wait(); err == nil && st.Signal != "SIGKILL" {
		t.Fatalf("the running exec ended %+v, want SIGKILL", st)
	}
	w := s.cli.ContainerWait(ctx(t), s.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case res := <-w.Result:
		if res.StatusCode != 0 {
			t.Fatalf("the keeper exited %d, want 0", res.StatusCode)
		}
	case err := <-w.Error:
		t.Fatal(err)
	}
	<-c.Done()
}

// TestShutdownRefusedOutsideInit: a keeper that is not a sandbox's init
// (here a plain child of the test) refuses, and serves on: kill(-1) would
// reach far more than a sandbox.
func TestShutdownRefusedOutsideInit(t *testing.T) {
	c, _ := openStdio(t)
	err := c.Shutdown(ctx(t))
	var fe *FileError
	if !errors.As(err, &fe) || !strings.Contains(fe.Msg, "not the protected init") {
		t.Fatalf("shutdown outside a sandbox: %v", err)
	}
	e, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"true"}, Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := e.Wait(); err != nil || st.Code != 0 {
		t.Fatalf("exec after a refused shutdown: %+v %v", st, err)
	}
}

// TestShutdownUnsupported: a keeper that did not announce the feature is
// never sent the frame.
func TestShutdownUnsupported(t *testing.T) {
	c, _ := openStdio(t)
	c.welcome.Features = nil
	if err := c.Shutdown(context.Background()); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("got %v, want ErrUnsupported", err)
	}
}
