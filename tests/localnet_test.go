package tests

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/resident-dev/resident/internal/testhost"
	"github.com/resident-dev/resident/protocol"
)

// needLocalNet skips where local does not isolate (no bwrap): it then
// announces neither port_forward nor egress.
func needLocalNet(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not installed: local has no network namespace of its own to forward into")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on the host: the sandbox's server and client are the host's python3")
	}
}

// localIn runs a shell script in the sandbox and returns its stdout.
func localIn(t *testing.T, h *LiveHost, id, execID, script string) (string, protocol.ExecResult) {
	t.Helper()
	var res protocol.ExecResult
	h.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": id, "exec_id": execID, "argv": []string{"sh", "-c", script}, "timeout_s": 300}, &res)
	return string(h.Out(execID, "stdout")), res
}

// TestLocalForwardCarriesManyConnectionsAndALargeBody: on local, a web
// server one exec starts in the sandbox (loopback only) is reached by the
// host through a forward, over the sandbox's keeper: 50 connections at
// once, and a 100 MB body checked by hash.
func TestLocalForwardCarriesManyConnectionsAndALargeBody(t *testing.T) {
	needLocalNet(t)
	h := SpawnLive(t, LiveOpts{KeepOut: true})
	init := h.Init(UniqueInstall("localfwd"), nil)
	if !init.Capabilities.PortForward || !init.Capabilities.Egress {
		t.Fatalf("local under bwrap announces port_forward=%v egress=%v, want both", init.Capabilities.PortForward, init.Capabilities.Egress)
	}
	id := h.Create(map[string]any{})
	fwd := serveAndForward(t, h, id, 50, 100)

	// The forward ends with its sandbox.
	h.Call(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": id}, nil)
	WaitUntil(t, "the terminated sandbox's forward refuses connections", func() bool {
		c, err := net.Dial("tcp", fwd.Address)
		if err != nil {
			return true
		}
		_ = c.Close()
		return false
	})
}

// serveAndForward starts a web server in the sandbox (the host's python3),
// forwards its port, and checks conns pages fetched at once and a body of
// bigMB by hash through the forward.
func serveAndForward(t *testing.T, h *LiveHost, id string, conns, bigMB int) protocol.ForwardPortResult {
	t.Helper()
	out, res := localIn(t, h, id, "setup", fmt.Sprintf("mkdir -p /srv/www && cd /srv/www && echo ok > ready && for i in $(seq %d); do echo page-$i > p$i; done && "+
		"head -c %d /dev/urandom > big && sha256sum big", conns, bigMB<<20))
	if res.ExitCode != 0 {
		t.Fatalf("setup exited %d: %s", res.ExitCode, h.Out("setup", "stderr"))
	}
	wantSum, _, _ := strings.Cut(out, " ")
	h.Send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": id, "exec_id": "httpd",
		"argv": []string{"python3", "-m", "http.server", "--bind", "127.0.0.1", "--directory", "/srv/www", "8080"}})
	var fwd protocol.ForwardPortResult
	h.Call(protocol.MethodForwardPort, map[string]any{"sandbox_id": id, "port": 8080}, &fwd)
	if !strings.HasPrefix(fwd.Address, "127.0.0.1:") || fwd.ForwardID == "" {
		t.Fatalf("forward_port answered %+v", fwd)
	}
	WaitUntil(t, "the server answers through the forward", func() bool {
		_, err := Fetch(fwd.Address, "/ready")
		return err == nil
	})

	CheckForwardedServer(t, fwd.Address, conns, int64(bigMB)<<20, wantSum)
	return fwd
}

// TestServedLocalForwardsThroughExternal: the resident on an external
// provider (local served by `resident --serve-provider local`) announces
// port_forward and egress from the served provider's net/commands, and a
// forward carries each connection as a connection stream of the provider
// protocol (conn/open: served local announces connections): 20 pages at
// once and 8 MB by hash.
func TestServedLocalForwardsThroughExternal(t *testing.T) {
	needLocalNet(t)
	served := t.TempDir()
	t.Cleanup(func() { testhost.EndLocalInits(served) }) // last: after the resident and its provider stopped
	h := SpawnLive(t, LiveOpts{KeepOut: true, Args: []string{"--provider", "external", "--", ResidentBin, "--serve-provider", "local", "--state-dir", served}})
	init := h.Init(UniqueInstall("extfwd"), nil)
	if !init.Capabilities.PortForward || !init.Capabilities.Egress {
		t.Fatalf("served local announces port_forward=%v egress=%v through external, want both", init.Capabilities.PortForward, init.Capabilities.Egress)
	}
	id := h.Create(map[string]any{})
	serveAndForward(t, h, id, 20, 8)
}

// countingServer is a web server on the host's loopback that counts
// requests.
func countingServer(t *testing.T, body string) (*atomic.Int64, int) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return &hits, srv.Listener.Addr().(*net.TCPAddr).Port
}

// proxyTalk is a python3 script that sends request to the sandbox's proxy
// and prints all it answers.
func proxyTalk(request string) string {
	return fmt.Sprintf(`python3 -c 'import socket,sys
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(%q.encode())
out = b""
while True:
    b = s.recv(65536)
    if not b: break
    out += b
sys.stdout.write(out.decode(errors="replace"))'`, request)
}

// TestLocalEgressReachesOnlyWhatItsRulesAllow: on local, a sandbox with
// spec.egress (its network none: a namespace holding only lo) reaches a
// server on the host's loopback that an exact rule names, through the proxy
// its environment announces (plain HTTP and CONNECT); a server no rule
// names, loopback reached by a name rule and the metadata address are
// refused with 403 and a message, and logged; a process that connects
// around the proxy, to the host's loopback or to any address of the host,
// gets nothing.
func TestLocalEgressReachesOnlyWhatItsRulesAllow(t *testing.T) {
	needLocalNet(t)
	allowedHits, allowed := countingServer(t, "allowed-body")
	otherHits, other := countingServer(t, "other-body")
	// A listener on every address of the host: the sandbox must reach it
	// on none of them.
	wide, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	var wideHits atomic.Int64
	go func() {
		for {
			c, err := wide.Accept()
			if err != nil {
				return
			}
			wideHits.Add(1)
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = wide.Close() })
	widePort := wide.Addr().(*net.TCPAddr).Port
	var hostAddrs []string
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() {
				hostAddrs = append(hostAddrs, ip.IP.String())
			}
		}
	}

	h := SpawnLive(t, LiveOpts{KeepOut: true, Args: []string{"--log-level", "info"}})
	h.Init(UniqueInstall("localegress"), nil)
	id := h.Create(map[string]any{"egress": map[string]any{"allow": []string{
		fmt.Sprintf("127.0.0.1:%d", allowed), fmt.Sprintf("localhost:%d", other),
	}}})

	out, _ := localIn(t, h, id, "env", "env | grep -i _proxy= | sort")
	for _, want := range []string{"HTTP_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "NO_PROXY=localhost,127.0.0.1,::1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the sandbox's env lacks %s:\n%s", want, out)
		}
	}

	out, _ = localIn(t, h, id, "plain", proxyTalk(fmt.Sprintf("GET http://127.0.0.1:%d/x HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n\r\n", allowed, allowed)))
	if !strings.HasSuffix(out, "allowed-body") {
		t.Errorf("plain HTTP through the proxy to an allowed rule read %q", out)
	}
	out, _ = localIn(t, h, id, "connect", proxyTalk(fmt.Sprintf("CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\nGET /y HTTP/1.0\r\n\r\n", allowed)))
	if !strings.HasPrefix(out, "HTTP/1.1 200 Connection established") || !strings.HasSuffix(out, "allowed-body") {
		t.Errorf("CONNECT to an allowed rule read %q", out)
	}
	if allowedHits.Load() != 2 {
		t.Errorf("the allowed server saw %d requests, want 2", allowedHits.Load())
	}

	for name, target := range map[string]string{
		"no rule":                 fmt.Sprintf("127.0.0.1:%d", other),
		"loopback by a name rule": fmt.Sprintf("localhost:%d", other),
		"metadata":                "169.254.169.254:80",
	} {
		out, _ = localIn(t, h, id, "refused-"+strings.ReplaceAll(name, " ", "-"), proxyTalk(fmt.Sprintf("CONNECT %s HTTP/1.1\r\n\r\n", target)))
		if !strings.HasPrefix(out, "HTTP/1.1 403 Forbidden") || !strings.Contains(out, "resident egress: ") {
			t.Errorf("%s (%s): read %q, want a 403 with the reason", name, target, out)
		}
	}
	if otherHits.Load() != 0 {
		t.Errorf("a server no rule allows saw %d requests", otherHits.Load())
	}

	// Around the proxy: every direct connection fails, to the allowed
	// server's loopback port and to the wide listener on each host address.
	targets := []string{fmt.Sprintf("(\"127.0.0.1\", %d)", allowed), fmt.Sprintf("(\"127.0.0.1\", %d)", widePort)}
	for _, a := range hostAddrs {
		targets = append(targets, fmt.Sprintf("(%q, %d)", a, widePort))
	}
	out, res := localIn(t, h, id, "around", `python3 -c 'import socket
for t in [`+strings.Join(targets, ", ")+`]:
    try:
        socket.create_connection(t, timeout=5).close()
        print("reached", t)
    except OSError as e:
        print("failed", t, e)'`)
	if strings.Contains(out, "reached") || res.ExitCode != 0 || strings.Count(out, "failed") != len(targets) {
		t.Errorf("direct connections from the sandbox (exit %d):\n%s", res.ExitCode, out)
	}
	if allowedHits.Load() != 2 || wideHits.Load() != 0 {
		t.Errorf("a connection around the proxy reached the host (allowed server %d requests, wide listener %d)", allowedHits.Load(), wideHits.Load())
	}
	if log := h.Stderr(); !strings.Contains(log, "egress refused") {
		t.Errorf("the refusals are not logged:\n%s", Tail(log, 3000))
	}
}
