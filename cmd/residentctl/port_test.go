package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/resident-dev/resident/provider/docker/dockertest"
)

// TestPortForwardsOnDocker: `residentctl port ID PORT` prints an address
// that reaches a server inside the sandbox, holds it until Ctrl-C, and then
// exits 0.
func TestPortForwardsOnDocker(t *testing.T) {
	busybox, _, err := dockertest.Images(dockertest.Need(t))
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	r := ctl(t, state, nil, "--provider", "docker", "run", "--keep", "--image", busybox, "--",
		"sh", "-c", "mkdir -p /srv && echo hi > /srv/index.html && httpd -p 127.0.0.1:8080 -h /srv")
	r.want(t, 0, "")
	id := strings.TrimSpace(strings.TrimPrefix(string(r.stderr), "residentctl: kept sandbox "))
	t.Cleanup(func() { ctl(t, state, nil, "--provider", "docker", "rm", id) })
	checkPort(t, state, id, "--provider", "docker")
}

// TestPortForwardsOnLocal: the same on local, whose execs share the
// sandbox's network namespace through its keeper: a server a detached exec
// starts (the host's python3, as local runs host binaries) is reached from
// the host through the forward. Without bwrap local announces no
// port_forward, and residentctl says so with the kind.
func TestPortForwardsOnLocal(t *testing.T) {
	state := t.TempDir()
	r := ctl(t, state, nil, "run", "--keep", "--", "sh", "-c", "mkdir -p /srv && echo hi > /srv/index.html")
	r.want(t, 0, "")
	id := strings.TrimSpace(strings.TrimPrefix(string(r.stderr), "residentctl: kept sandbox "))
	t.Cleanup(func() { ctl(t, state, nil, "rm", id) })
	ctl(t, state, nil, "port", id, "http").want(t, exitUsage, "")
	if _, err := exec.LookPath("bwrap"); err != nil {
		r = ctl(t, state, nil, "port", id, "8080")
		r.want(t, 1, "")
		if !strings.Contains(string(r.stderr), "cannot forward ports") || !strings.Contains(string(r.stderr), "invalid_request") {
			t.Fatalf("stderr: %s", r.stderr)
		}
		return
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on the host to serve from the sandbox")
	}
	ctl(t, state, nil, "exec", id, "-d", "--id", "web", "--", "python3", "-m", "http.server", "--bind", "127.0.0.1", "--directory", "/srv", "8080").want(t, 0, "*")
	checkPort(t, state, id)
}

// checkPort runs `residentctl port ID 8080` (with the provider flags
// first), fetches / through the address it prints until the server in the
// sandbox answers "hi", then sends Ctrl-C and wants exit 0.
func checkPort(t *testing.T, state, id string, flags ...string) {
	t.Helper()
	args := append(append([]string{"--state-dir", state, "--install-id", "ctl-" + t.Name()}, flags...), "port", id, "8080")
	cmd := exec.Command(ctlBin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	address, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("residentctl port printed no address: %v", err)
	}
	var body []byte
	// The server may still be starting: a connection it does not take yet
	// ends at once; bounded by the test's own timeout, not by a clock here.
	for {
		resp, err := http.Get("http://" + strings.TrimSpace(address) + "/")
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if string(body) != "hi\n" {
		t.Fatalf("the forward served %q", body)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("residentctl port after Ctrl-C: %v", err)
	}
}
