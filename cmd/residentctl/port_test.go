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

	cmd := exec.Command(ctlBin, "--state-dir", state, "--install-id", "ctl-"+t.Name(), "--provider", "docker", "port", id, "8080")
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
	resp, err := http.Get("http://" + strings.TrimSpace(address) + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hi\n" {
		t.Fatalf("the forward served %q", body)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("residentctl port after Ctrl-C: %v", err)
	}
}
