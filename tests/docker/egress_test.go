package docker_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider/providertest"
	"github.com/resident-dev/resident/tests"
)

// hostServer is a web server on the host's loopback that counts requests.
func hostServer(t *testing.T, body string) (*httptest.Server, *atomic.Int64, int) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	var n int
	fmt.Sscan(port, &n)
	return srv, &hits, n
}

// inSandbox runs a shell script in the sandbox and returns its stdout.
func inSandbox(t *testing.T, h *tests.LiveHost, id, execID, script string) (string, protocol.ExecResult) {
	t.Helper()
	var res protocol.ExecResult
	h.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": id, "exec_id": execID, "argv": []string{"sh", "-c", script}, "timeout_s": 120}, &res)
	return string(h.Out(execID, "stdout")), res
}

// TestEgressReachesOnlyWhatItsRulesAllow: a sandbox with network none and
// spec.egress reaches a server on the host's loopback that an exact rule
// names, through the proxy its environment announces (plain HTTP and
// CONNECT); a server no rule names, and loopback reached by a name rule,
// are refused with 403 and a message; a process that connects around the
// proxy gets nothing.
func TestEgressReachesOnlyWhatItsRulesAllow(t *testing.T) {
	image := NeedDocker(t)
	_, allowedHits, allowed := hostServer(t, "allowed-body")
	_, otherHits, other := hostServer(t, "other-body")
	h := SpawnDocker(t, tests.LiveOpts{KeepOut: true, Args: []string{"--log-level", "info"}}, "")
	h.Init(tests.UniqueInstall("egress"), nil)
	id := h.Create(map[string]any{"image": image, "egress": map[string]any{"allow": []string{
		fmt.Sprintf("127.0.0.1:%d", allowed), fmt.Sprintf("localhost:%d", other),
	}}})

	out, _ := inSandbox(t, h, id, "env", "env | grep -i _proxy= | sort")
	for _, want := range []string{"HTTP_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "NO_PROXY=localhost,127.0.0.1,::1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the sandbox's env lacks %s:\n%s", want, out)
		}
	}

	out, _ = inSandbox(t, h, id, "plain", fmt.Sprintf(`wget -q -O - -Y on http://127.0.0.1:%d/x`, allowed))
	if out != "allowed-body" {
		t.Errorf("plain HTTP through the proxy to an allowed rule read %q", out)
	}
	out, _ = inSandbox(t, h, id, "connect", providertest.ProxyTalkScript(fmt.Sprintf(`CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\nGET /y HTTP/1.0\r\n\r\n`, allowed)))
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
		out, _ = inSandbox(t, h, id, "refused-"+strings.ReplaceAll(name, " ", "-"), providertest.ProxyTalkScript(fmt.Sprintf(`CONNECT %s HTTP/1.1\r\n\r\n`, target)))
		if !strings.HasPrefix(out, "HTTP/1.1 403 Forbidden") || !strings.Contains(out, "resident egress: ") {
			t.Errorf("%s (%s): read %q, want a 403 with the reason", name, target, out)
		}
	}
	if otherHits.Load() != 0 {
		t.Errorf("a server no rule allows saw %d requests", otherHits.Load())
	}

	// Around the proxy: the sandbox's own network is none.
	out, res := inSandbox(t, h, id, "around", fmt.Sprintf(`unset http_proxy HTTP_PROXY; wget -q -O - -T 5 http://127.0.0.1:%d/ ; wget -q -O - -T 5 http://172.17.0.1:%d/; echo rc=$?`, allowed, allowed))
	if strings.Contains(out, "allowed-body") || !strings.Contains(out, "rc=1") || res.ExitCode != 0 {
		t.Errorf("a direct connection read %q", out)
	}
	if allowedHits.Load() != 2 {
		t.Errorf("a connection around the proxy reached the host server (%d requests)", allowedHits.Load())
	}
	if log := h.Stderr(); !strings.Contains(log, "egress refused") {
		t.Errorf("the refusals are not logged:\n%s", tests.Tail(log, 3000))
	}
}
