package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// keeperBin is this package built as the real keeper (static, no cgo): a
// run needs a real process whose stdout a background child can inherit,
// and a test binary built with -race cannot be one (cgo refuses the
// all-threads prctl the keeper's protection makes).
var keeperBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "keeper-test-")
	if err != nil {
		panic(err)
	}
	keeperBin = filepath.Join(dir, "keeper")
	build := exec.Command("go", "build", "-o", keeperBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		panic(fmt.Sprintf("build the keeper: %v\n%s", err, out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func keeperCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	return exec.Command(keeperBin, args...)
}

// With -relay a run ends when its child exits, although a background child
// still holds the output it was given: the exec's stream is the keeper's
// alone. The child's output before the exit arrives whole.
func TestRelayEndsWithTheChild(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := keeperCmd(t, keeperproto.CmdRun, "-relay", "-token", "0123456789ab", "--",
		"sh", "-c", "echo out; echo err >&2; sleep 60 & echo $! > "+pidFile)
	done := make(chan error, 1)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// The control stream stays open: its end would kill the tree.
	control, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer control.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("keeper run: %v (stderr %q)", err, errOut.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("keeper run did not end while a background child held its output")
	}
	if got := out.String(); !strings.HasPrefix(got, keeperproto.StatusPrefix+"ok") || !strings.HasSuffix(got, "\nout\n") {
		t.Fatalf("stdout %q", got)
	}
	if got := errOut.String(); got != "err\n" {
		t.Fatalf("stderr %q", got)
	}
}

// install puts a runnable copy of the keeper into a directory.
func TestInstall(t *testing.T) {
	dir := t.TempDir()
	if out, err := keeperCmd(t, keeperproto.CmdInstall, dir).CombinedOutput(); err != nil {
		t.Fatalf("install: %v: %s", err, out)
	}
	st, err := os.Stat(filepath.Join(dir, "keeper"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o555 {
		t.Fatalf("mode %v", st.Mode())
	}
}

// -env-stdin takes the child's environment from frames before the control
// frames, over the keeper's own (later wins), never from a command line.
func TestEnvFrames(t *testing.T) {
	cmd := keeperCmd(t, keeperproto.CmdRun, "-env-stdin", "-stdin", "-token", "0123456789ab", "--", "sh", "-c", `echo "$FOO|$BOTH"; read line; echo "$line"`)
	cmd.Env = append(os.Environ(), "BOTH=keeper")
	control, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		typ     byte
		payload string
	}{{keeperproto.FrameEnv, "FOO=a b\x00BOTH=first\x00"}, {keeperproto.FrameEnv, "BOTH=exec\x00"}, {keeperproto.FrameEnv, ""}, {keeperproto.FrameData, "typed\n"}, {keeperproto.FrameEOF, ""}} {
		if err := keeperproto.WriteFrame(control, f.typ, []byte(f.payload)); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("run did not end")
	}
	control.Close()
	if got := strings.TrimPrefix(out.String(), keeperproto.StatusPrefix+"ok 0\n"); got != "a b|exec\ntyped\n" {
		t.Fatalf("stdout %q", out.String())
	}
}

// put takes a relative path in its working directory (a Kubernetes exec
// starts in the container's, which the provider may not know).
func TestPutRelative(t *testing.T) {
	dir := t.TempDir()
	cmd := keeperCmd(t, keeperproto.CmdPut, "--", "sub/file")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader("data")
	if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), "error") {
		t.Fatalf("put: %v: %s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "sub/file")); err != nil || string(b) != "data" {
		t.Fatalf("file: %q %v", b, err)
	}
}
