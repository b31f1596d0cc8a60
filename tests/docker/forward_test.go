package docker_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/tests"
)

// startWebServer creates a sandbox with a busybox httpd serving dir on
// 127.0.0.1:port inside it, and a forward to it; it returns the sandbox
// and the forward's result once the server answers through the forward.
func startWebServer(t *testing.T, h *tests.LiveHost, image, setup string, port int) (string, protocol.ForwardPortResult) {
	t.Helper()
	id := h.Create(map[string]any{"image": image})
	var res protocol.ExecResult
	h.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": id, "exec_id": "setup", "argv": []string{"sh", "-c", "mkdir -p /srv/www && cd /srv/www && " + setup}}, &res)
	if res.ExitCode != 0 {
		t.Fatalf("setup exited %d: %s", res.ExitCode, h.Out("setup", "stderr"))
	}
	h.Send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": id, "exec_id": "httpd",
		"argv": []string{"httpd", "-f", "-p", fmt.Sprintf("127.0.0.1:%d", port), "-h", "/srv/www"}})
	var fwd protocol.ForwardPortResult
	h.Call(protocol.MethodForwardPort, map[string]any{"sandbox_id": id, "port": port}, &fwd)
	if !strings.HasPrefix(fwd.Address, "127.0.0.1:") || fwd.ForwardID == "" {
		t.Fatalf("forward_port answered %+v", fwd)
	}
	tests.WaitUntil(t, "httpd answers through the forward", func() bool {
		_, err := tests.Fetch(fwd.Address, "/ready")
		return err == nil
	})
	return id, fwd
}

// TestForwardCarriesManyConnectionsAndALargeBody: a web server in a
// sandbox whose network is none, fetched from the host through a forward,
// by 50 connections at once and for a 100 MB body checked by hash.
func TestForwardCarriesManyConnectionsAndALargeBody(t *testing.T) {
	image := NeedDocker(t)
	h := SpawnDocker(t, tests.LiveOpts{KeepOut: true}, "")
	init := h.Init(tests.UniqueInstall("fwd"), nil)
	if !init.Capabilities.PortForward || !init.Capabilities.Egress {
		t.Fatalf("docker announces port_forward=%v egress=%v, want both", init.Capabilities.PortForward, init.Capabilities.Egress)
	}
	setup := "echo ok > ready && for i in $(seq 50); do echo page-$i > p$i; done && " +
		"dd if=/dev/urandom of=big bs=1M count=100 2>/dev/null && sha256sum big"
	_, fwd := startWebServer(t, h, image, setup, 8080)
	wantSum, _, _ := strings.Cut(string(h.Out("setup", "stdout")), " ")

	tests.CheckForwardedServer(t, fwd.Address, 50, 100<<20, wantSum)
}

// TestForwardEndsWithPortCloseAndWithTheSandbox: port/close stops the
// listener (and says whether it was open), and terminate ends a forward
// of its sandbox.
func TestForwardEndsWithPortCloseAndWithTheSandbox(t *testing.T) {
	image := NeedDocker(t)
	h := SpawnDocker(t, tests.LiveOpts{KeepOut: true}, "")
	h.Init(tests.UniqueInstall("fwdend"), nil)
	id, fwd := startWebServer(t, h, image, "echo ok > ready", 8081)

	var closed protocol.PortCloseResult
	h.Call(protocol.MethodPortClose, map[string]any{"forward_id": fwd.ForwardID}, &closed)
	if !closed.Existed {
		t.Fatal("port/close of an open forward said existed=false")
	}
	tests.WaitUntil(t, "the closed forward refuses connections", func() bool { return refused(fwd.Address) })
	h.Call(protocol.MethodPortClose, map[string]any{"forward_id": fwd.ForwardID}, &closed)
	if closed.Existed {
		t.Fatal("port/close twice said existed=true")
	}

	var again protocol.ForwardPortResult
	h.Call(protocol.MethodForwardPort, map[string]any{"sandbox_id": id, "port": 8081}, &again)
	if _, err := tests.Fetch(again.Address, "/ready"); err != nil {
		t.Fatal(err)
	}
	h.Call(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": id}, nil)
	tests.WaitUntil(t, "the terminated sandbox's forward refuses connections", func() bool { return refused(again.Address) })
	h.Call(protocol.MethodPortClose, map[string]any{"forward_id": again.ForwardID}, &closed)
	if closed.Existed {
		t.Fatal("a forward of a terminated sandbox is still open")
	}
}

// TestForwardOfAPortNobodyListensOnClosesTheConnection: the relay cannot
// connect, and the host's connection ends without a byte.
func TestForwardOfAPortNobodyListensOnClosesTheConnection(t *testing.T) {
	image := NeedDocker(t)
	h := SpawnDocker(t, tests.LiveOpts{}, "")
	h.Init(tests.UniqueInstall("fwdnone"), nil)
	id := h.Create(map[string]any{"image": image})
	var fwd protocol.ForwardPortResult
	h.Call(protocol.MethodForwardPort, map[string]any{"sandbox_id": id, "port": 9}, &fwd)
	conn, err := net.Dial("tcp", fwd.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = conn.Write([]byte("hello\n"))
	got, err := io.ReadAll(bufio.NewReader(conn))
	if err != nil || len(got) != 0 {
		t.Fatalf("read %q (%v), want an empty, closed connection", got, err)
	}
	h.CallErr(protocol.MethodForwardPort, map[string]any{"sandbox_id": id, "port": 0}, protocol.KindInvalidRequest)
	h.CallErr(protocol.MethodForwardPort, map[string]any{"sandbox_id": "dkr-000000000000", "port": 80}, protocol.KindNotFound)
}

func refused(address string) bool {
	c, err := net.DialTimeout("tcp", address, 5*time.Second)
	if err != nil {
		return true
	}
	_ = c.Close()
	return false
}
