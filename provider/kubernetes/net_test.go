package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/resident-dev/resident/client"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/providertest"
	"github.com/resident-dev/resident/resident"
	"github.com/resident-dev/resident/tests"
)

// session is a resident serving p in this process over a pipe, as
// cmd/resident serves stdio, initialised for an install of its own; its
// log is kept.
type session struct {
	c    *client.Client
	p    *Provider
	logs *observer.ObservedLogs
	init *protocol.InitializeResult
}

func newSession(t testing.TB, p *Provider) *session {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	ours, theirs := net.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- resident.Serve(context.Background(), ours, resident.Options{Provider: p, Logger: zap.New(core)})
	}()
	c := client.Attach(theirs, client.Options{})
	t.Cleanup(func() {
		_ = c.Close()
		<-done
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	init, err := c.Initialize(ctx, protocol.InitializeParams{InstallID: testOwner("net").InstallID})
	if err != nil {
		t.Fatal(err)
	}
	return &session{c: c, p: p, logs: logs, init: init}
}

// create makes a sandbox through the session, terminated at the test's end.
func (s *session) create(t testing.TB, spec protocol.Spec) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spec.Image = cluster.Image
	id, err := s.c.Create(ctx, protocol.CreateParams{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = s.p.Terminate(context.Background(), id) })
	return id
}

// sh runs a script in the sandbox through the session; its stdout and exit code.
func (s *session) sh(t testing.TB, id, script string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	res, err := s.c.Exec(ctx, protocol.ExecParams{SandboxID: id, Argv: []string{"sh", "-c", script}, TimeoutS: 150}, client.Streams{Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatalf("sh %q: %v (stderr %q)", script, err, errOut.String())
	}
	return out.String(), res.ExitCode
}

// startWebServer starts busybox httpd on 127.0.0.1:port in a sandbox of
// network none, serving what setup made in its directory, and forwards
// the port; it returns the forward once the server answers through it.
func (s *session) startWebServer(t testing.TB, id, setup string, port int) protocol.ForwardPortResult {
	t.Helper()
	return s.startWebServerAt(t, id, setup, "127.0.0.1:"+strconv.Itoa(port), port)
}

// startWebServerAt is startWebServer with httpd listening on listen.
func (s *session) startWebServerAt(t testing.TB, id, setup, listen string, port int) protocol.ForwardPortResult {
	t.Helper()
	if out, code := s.sh(t, id, "mkdir -p /tmp/www && cd /tmp/www && "+setup); code != 0 {
		t.Fatalf("setup exited %d: %s", code, out)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_, _ = s.c.Exec(ctx, protocol.ExecParams{SandboxID: id, Argv: []string{"httpd", "-f", "-p", listen, "-h", "/tmp/www"}}, client.Streams{})
	}()
	t.Cleanup(func() { stop(); <-served })
	fctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fwd, err := s.c.ForwardPort(fctx, id, port)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(fwd.Address, "127.0.0.1:") || fwd.ForwardID == "" {
		t.Fatalf("forward_port answered %+v", fwd)
	}
	waitUntil(t, "httpd answers through the forward", func() bool {
		_, err := tests.Fetch(fwd.Address, "/ready")
		return err == nil
	})
	return *fwd
}

// TestForwardThroughTheResident: a web server in a pod whose network is
// none (its deny-all policy), fetched from the host through
// sandbox/forward_port by 50 connections at once and for a large body
// checked by hash; the forward ends with port/close and with the sandbox.
// Over the channel each connection is a connection stream; with
// exec=exec each is one exec of the keeper's relay.
func TestForwardThroughTheResident(t *testing.T) {
	for _, c := range []struct {
		mode string
		big  int // MiB
	}{{modeChannel, 100}, {modeExec, 16}} {
		t.Run(c.mode, func(t *testing.T) {
			s := newSession(t, newTestProviderMode(t, c.mode, nil))
			if !s.init.Capabilities.PortForward {
				t.Fatalf("kubernetes (exec=%s) announces no port_forward", c.mode)
			}
			id := s.create(t, protocol.Spec{})
			setup := fmt.Sprintf("echo ok > ready && for i in $(seq 50); do echo page-$i > p$i; done && "+
				"dd if=/dev/urandom of=big bs=1M count=%d 2>/dev/null && sha256sum big", c.big)
			fwd := s.startWebServer(t, id, setup, 8080)
			out, _ := s.sh(t, id, "sha256sum /tmp/www/big")
			wantSum, _, _ := strings.Cut(out, " ")
			tests.CheckForwardedServer(t, fwd.Address, 50, int64(c.big)<<20, wantSum)

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if existed, err := s.c.ClosePort(ctx, fwd.ForwardID); err != nil || !existed {
				t.Fatalf("port/close of an open forward: %v, %v", existed, err)
			}
			tests.WaitUntil(t, "the closed forward refuses connections", func() bool { return refused(fwd.Address) })
			again, err := s.c.ForwardPort(ctx, id, 8080)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tests.Fetch(again.Address, "/ready"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.c.Terminate(ctx, id); err != nil {
				t.Fatal(err)
			}
			tests.WaitUntil(t, "the terminated sandbox's forward refuses connections", func() bool { return refused(again.Address) })
		})
	}
}

// waitUntil polls cond (bounded: a minute) until it holds.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func refused(address string) bool {
	c, err := net.DialTimeout("tcp", address, 5*time.Second)
	if err != nil {
		return true
	}
	_ = c.Close()
	return false
}

// TestEgressThroughTheResident: a pod with spec.egress (so network none,
// its deny-all policy) reaches a server on the host's loopback that an
// exact rule names, through the proxy its environment announces; a server
// no rule names and the metadata address are refused with a 403 that says
// why, and logged; a process that connects around the proxy, to the
// node's addresses, reaches nothing.
func TestEgressThroughTheResident(t *testing.T) {
	for _, mode := range []string{modeChannel, modeExec} {
		t.Run(mode, func(t *testing.T) {
			s := newSession(t, newTestProviderMode(t, mode, nil))
			if !cluster.PoliciesEnforced {
				if s.init.Capabilities.Egress {
					t.Fatal("egress announced on a cluster that does not enforce NetworkPolicy")
				}
				t.Skip("NetworkPolicy is not enforced on this cluster: egress is not announced")
			}
			if !s.init.Capabilities.Egress {
				t.Fatalf("kubernetes (exec=%s) announces no egress", mode)
			}
			allowed, allowedHits := hostServer(t, "allowed-body")
			other, otherHits := hostServer(t, "other-body")
			id := s.create(t, protocol.Spec{Egress: &protocol.Egress{Allow: []string{"127.0.0.1:" + strconv.Itoa(allowed)}}})

			out, _ := s.sh(t, id, "env | grep -i _proxy= | sort")
			for _, want := range []string{"HTTP_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "NO_PROXY=localhost,127.0.0.1,::1"} {
				if !strings.Contains(out, want) {
					t.Errorf("the pod's env lacks %s:\n%s", want, out)
				}
			}
			if out, _ := s.sh(t, id, fmt.Sprintf("wget -q -O - -Y on http://127.0.0.1:%d/x", allowed)); out != "allowed-body" {
				t.Errorf("plain HTTP through the proxy to an allowed rule read %q", out)
			}
			if out, _ := s.sh(t, id, providertest.ProxyTalkScript(fmt.Sprintf(`CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\nGET /y HTTP/1.0\r\n\r\n`, allowed))); !strings.HasPrefix(out, "HTTP/1.1 200 Connection established") || !strings.HasSuffix(out, "allowed-body") {
				t.Errorf("CONNECT to an allowed rule read %q", out)
			}
			if allowedHits.Load() != 2 {
				t.Errorf("the allowed server saw %d requests, want 2", allowedHits.Load())
			}
			for _, target := range []string{"127.0.0.1:" + strconv.Itoa(other), "169.254.169.254:80"} {
				out, _ := s.sh(t, id, providertest.ProxyTalkScript(fmt.Sprintf(`CONNECT %s HTTP/1.1\r\n\r\n`, target)))
				if !strings.HasPrefix(out, "HTTP/1.1 403 Forbidden") || !strings.Contains(out, "resident egress: ") {
					t.Errorf("CONNECT %s read %q, want a 403 with the reason", target, out)
				}
			}
			if otherHits.Load() != 0 {
				t.Errorf("a server no rule allows saw %d requests", otherHits.Load())
			}
			if s.logs.FilterMessage("egress refused").Len() < 2 {
				t.Errorf("the refusals are not logged: %v", s.logs.All())
			}

			// Around the proxy: every address of this machine, where the
			// server listens on all of them, and the pod's own loopback.
			around := listenEverywhere(t)
			out, code := s.sh(t, id, around.probe())
			if code != 0 || strings.Contains(out, "reached") || strings.Count(out, "failed") != len(around.targets) || around.accepted.Load() != 0 {
				t.Errorf("around the proxy (exit %d, %d accepted):\n%s", code, around.accepted.Load(), out)
			}
			// The same probe from a pod of the cluster's network reaches
			// this machine: the refusals above are the policy's.
			bridge := s.create(t, protocol.Spec{Network: "bridge"})
			if out, code := s.sh(t, bridge, around.probe()); code != 0 || !strings.Contains(out, "reached") || around.accepted.Load() == 0 {
				t.Errorf("a bridge pod reached none of this machine's addresses (exit %d):\n%s", code, out)
			}
		})
	}
}

// hostServer is a web server on the host's loopback that counts requests.
func hostServer(t *testing.T, body string) (int, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port, &hits
}

type everywhere struct {
	targets  []string // host:port, this machine's every IPv4 address
	accepted atomic.Int64
}

// listenEverywhere listens on every address of this machine (the node's,
// the pod bridge's gateway among them) and counts what connects.
func listenEverywhere(t *testing.T) *everywhere {
	t.Helper()
	ln, err := net.Listen("tcp4", ":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	e := &everywhere{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.accepted.Add(1)
			_ = c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil {
			e.targets = append(e.targets, net.JoinHostPort(ip.IP.String(), port))
		}
	}
	return e
}

// probe is a script that connects to every target around any proxy and
// says, per target, whether it reached it.
func (e *everywhere) probe() string {
	var script strings.Builder
	script.WriteString("unset http_proxy HTTP_PROXY https_proxy HTTPS_PROXY\n")
	script.WriteString("command -v timeout >/dev/null && command -v nc >/dev/null || { echo no timeout or nc; exit 1; }\n")
	for _, a := range e.targets {
		host, port, _ := net.SplitHostPort(a)
		fmt.Fprintf(&script, "if echo x | timeout 5 nc %s %s >/dev/null 2>&1; then echo reached %s; else echo failed %s; fi\n", host, port, a, a)
	}
	return script.String()
}

// TestDialRefusals: the provider's own answers of DialSandbox and
// AttachProxy where no connection stream can be had: exec=exec and a pod
// without the channel (the relay's turn, provider.ErrNoDial), a pod
// deleted behind the provider's back (not_found), a terminated one.
func TestDialRefusals(t *testing.T) {
	p := newTestProvider(t)
	execMode := newTestProviderMode(t, modeExec, nil)
	owner := testOwner("dial")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	plain := createFor(t, execMode, owner, protocol.Spec{Image: cluster.Image})
	if _, err := execMode.DialSandbox(ctx, plain, 80); !errors.Is(err, provider.ErrNoDial) {
		t.Errorf("DialSandbox with exec=exec: %v, want ErrNoDial", err)
	}
	if _, err := execMode.AttachProxy(ctx, plain, "1"); !errors.Is(err, provider.ErrNoDial) {
		t.Errorf("AttachProxy with exec=exec: %v, want ErrNoDial", err)
	}
	// A channel-mode resident meets a pod made without the channel.
	if _, err := p.DialSandbox(ctx, plain, 80); !errors.Is(err, provider.ErrNoDial) {
		t.Errorf("DialSandbox of a pod without the channel: %v, want ErrNoDial", err)
	}

	id := createFor(t, p, owner, protocol.Spec{Image: cluster.Image})
	if _, err := p.DialSandbox(ctx, id, 9); protocol.KindOf(err) != protocol.KindTransient || !strings.Contains(err.Error(), "refused") {
		t.Errorf("DialSandbox of a closed port: %v, want transient, refused", err)
	}
	// Deleted by someone else: the held channel breaks with the pod.
	if err := admin.CoreV1().Pods(testNamespace).Delete(ctx, id, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
		t.Fatal(err)
	}
	tests.WaitUntil(t, "a dial into the deleted pod to say not_found", func() bool {
		_, err := p.DialSandbox(ctx, id, 9)
		return protocol.KindOf(err) == protocol.KindNotFound
	})

	gone := createFor(t, p, owner, protocol.Spec{Image: cluster.Image})
	if _, err := p.Terminate(ctx, gone); err != nil {
		t.Fatal(err)
	}
	for _, dial := range []func() error{
		func() error { _, err := p.DialSandbox(ctx, gone, 9); return err },
		func() error { _, err := p.AttachProxy(ctx, gone, "1"); return err },
		func() error { _, err := execMode.DialSandbox(ctx, "not a pod name", 9); return err },
	} {
		if err := dial(); protocol.KindOf(err) != protocol.KindNotFound {
			t.Errorf("a dial into a terminated or impossible sandbox: %v, want not_found", err)
		}
	}
}

// TestEgressNeedsEnforcedPolicies: without NetworkPolicy enforcement
// nothing keeps a pod's programs from going around the proxy, so egress is
// not announced; port forwarding still is.
func TestEgressNeedsEnforcedPolicies(t *testing.T) {
	for _, enforced := range []bool{true, false} {
		p := &Provider{enforced: enforced, channel: true, timing: defaultTiming}
		caps := p.Info().Capabilities
		if !caps.PortForward || caps.Egress != enforced {
			t.Errorf("network_policy_enforced=%v: port_forward %v, egress %v", enforced, caps.PortForward, caps.Egress)
		}
	}
}
