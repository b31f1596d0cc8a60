package providertest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// runNet checks provider.Relayer, the contract under port_forward and
// egress, with nothing but the provider's own commands: the proxy is the
// server a relay reaches inside the sandbox, so the image needs no tool.
func runNet(t *testing.T, h Harness) {
	e := newEnv(t, h)
	relayer, ok := e.p.(provider.Relayer)
	caps := e.p.Info().Capabilities
	if !ok {
		if caps.PortForward || caps.Egress {
			t.Fatalf("the provider announces port_forward=%v egress=%v but has no provider.Relayer", caps.PortForward, caps.Egress)
		}
		t.Skip("the provider has no provider.Relayer")
	}
	if !caps.PortForward && !caps.Egress {
		// A Relayer whose commands this instance cannot run (local without
		// bwrap, an external provider whose program has none): the
		// resident never asks for them.
		t.Skip("the provider announces neither port_forward nor egress")
	}
	id := e.create(protocol.Spec{}, nil)
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	proxy := startProxy(t, c, e.p, id, relayer.ProxyCommand("127.0.0.1:3999"))

	t.Run("relay_reaches_a_port_inside_and_a_refusal_comes_back", func(t *testing.T) {
		relay := start(t, c, e.p, id, provider.ExecRequest{Argv: relayer.RelayCommand(3999), Stdin: true})
		_, _ = io.WriteString(relay.proc.Stdin(), "CONNECT blocked.example:443 HTTP/1.1\r\n\r\n")
		ev := proxy.next(t)
		if ev.Host != "blocked.example" || ev.Port != 443 || ev.ID == "" {
			t.Fatalf("the proxy asked %+v, want blocked.example:443 with an id", ev)
		}
		proxy.refuse(t, ev.ID, "not on the list")
		_ = relay.proc.Stdin().Close()
		relay.wait(t)
		if out := relay.stdout.String(); !strings.HasPrefix(out, "HTTP/1.1 403 ") || !strings.Contains(out, "not on the list") {
			t.Fatalf("the relay carried back %q, want the proxy's 403 with the refusal", out)
		}
	})

	t.Run("attach_carries_a_held_connection_both_ways", func(t *testing.T) {
		relay := start(t, c, e.p, id, provider.ExecRequest{Argv: relayer.RelayCommand(3999), Stdin: true})
		_, _ = io.WriteString(relay.proc.Stdin(), "CONNECT allowed.example:443 HTTP/1.1\r\n\r\nfrom-client")
		ev := proxy.next(t)
		attach := start(t, c, e.p, id, provider.ExecRequest{Argv: relayer.AttachCommand(ev.ID), Stdin: true})
		_, _ = io.WriteString(attach.proc.Stdin(), "from-upstream")
		// The client hangs up only once the answer reached it: a client that
		// closes first may end the connection before the answer crosses.
		await(t, "the upstream's bytes to reach the client", func() bool {
			return strings.HasSuffix(relay.stdout.String(), "from-upstream")
		})
		_ = attach.proc.Stdin().Close()
		_ = relay.proc.Stdin().Close()
		relay.wait(t)
		attach.wait(t)
		if out := relay.stdout.String(); out != "HTTP/1.1 200 Connection established\r\n\r\nfrom-upstream" {
			t.Fatalf("the client read %q", out)
		}
		if out := attach.stdout.String(); out != "from-client" {
			t.Fatalf("upstream read %q", out)
		}
	})

	t.Run("attach_answers_a_client_that_half_closed", func(t *testing.T) {
		relay := start(t, c, e.p, id, provider.ExecRequest{Argv: relayer.RelayCommand(3999), Stdin: true})
		_, _ = io.WriteString(relay.proc.Stdin(), "CONNECT allowed.example:443 HTTP/1.1\r\n\r\nrequest")
		ev := proxy.next(t)
		attach := start(t, c, e.p, id, provider.ExecRequest{Argv: relayer.AttachCommand(ev.ID), Stdin: true})
		_ = relay.proc.Stdin().Close() // the client has sent all it will
		await(t, "the request and its end to reach upstream", func() bool { return attach.stdout.String() == "request" })
		_, _ = io.WriteString(attach.proc.Stdin(), "answer")
		_ = attach.proc.Stdin().Close()
		relay.wait(t)
		attach.wait(t)
		if out := relay.stdout.String(); out != "HTTP/1.1 200 Connection established\r\n\r\nanswer" {
			t.Fatalf("the client read %q, want the answer after its own half-close", out)
		}
	})

	t.Run("dial_reaches_the_port_the_relay_does", func(t *testing.T) {
		d, ok := e.p.(provider.Dialer)
		if !ok {
			t.Skip("the provider has no provider.Dialer")
		}
		conn, err := d.DialSandbox(c, id, 3999)
		if errors.Is(err, provider.ErrNoDial) {
			t.Skipf("the provider cannot dial here: %v", err)
		}
		if err != nil {
			t.Fatalf("DialSandbox(3999): %v", err)
		}
		defer conn.Close()
		_, _ = io.WriteString(conn, "CONNECT dialled.example:443 HTTP/1.1\r\n\r\n")
		_ = conn.CloseWrite() // a half-close reaches the server; the answer still comes back
		ev := proxy.next(t)
		if ev.Host != "dialled.example" || ev.Port != 443 {
			t.Fatalf("the proxy asked %+v, want dialled.example:443", ev)
		}
		proxy.refuse(t, ev.ID, "dialled and refused")
		out, _ := io.ReadAll(conn)
		if !strings.HasPrefix(string(out), "HTTP/1.1 403 ") || !strings.Contains(string(out), "dialled and refused") {
			t.Fatalf("the dialled connection read %q, want the proxy's 403", out)
		}
		if _, err := d.DialSandbox(c, id, 3998); err == nil || errors.Is(err, provider.ErrNoDial) {
			t.Fatalf("DialSandbox of a closed port: %v, want the connection's failure", err)
		}
		if _, err := d.DialSandbox(c, "no-such-sandbox", 3999); protocol.KindOf(err) != protocol.KindNotFound {
			t.Fatalf("DialSandbox of a missing sandbox: %v, want not_found", err)
		}
	})

	t.Run("attach_proxy_carries_a_held_connection_both_ways", func(t *testing.T) {
		a, ok := e.p.(provider.ProxyAttacher)
		if !ok {
			t.Skip("the provider has no provider.ProxyAttacher")
		}
		relay := start(t, c, e.p, id, provider.ExecRequest{Argv: relayer.RelayCommand(3999), Stdin: true})
		_, _ = io.WriteString(relay.proc.Stdin(), "CONNECT attached.example:443 HTTP/1.1\r\n\r\nfrom-client")
		ev := proxy.next(t)
		held, err := a.AttachProxy(c, id, ev.ID)
		if errors.Is(err, provider.ErrNoDial) {
			proxy.refuse(t, ev.ID, "no attach here") // the proxy would hold the client for its whole wait
			_ = relay.proc.Stdin().Close()
			relay.wait(t)
			t.Skipf("the provider cannot attach here: %v", err)
		}
		if err != nil {
			t.Fatalf("AttachProxy: %v", err)
		}
		defer held.Close()
		_, _ = io.WriteString(held, "from-upstream")
		_ = held.CloseWrite()
		await(t, "the upstream's bytes to reach the client", func() bool {
			return strings.HasSuffix(relay.stdout.String(), "from-upstream")
		})
		_ = relay.proc.Stdin().Close()
		got, _ := io.ReadAll(held)
		relay.wait(t)
		if out := relay.stdout.String(); out != "HTTP/1.1 200 Connection established\r\n\r\nfrom-upstream" {
			t.Fatalf("the client read %q", out)
		}
		if string(got) != "from-client" {
			t.Fatalf("upstream read %q", got)
		}
		if _, err := a.AttachProxy(c, "no-such-sandbox", ev.ID); protocol.KindOf(err) != protocol.KindNotFound {
			t.Fatalf("AttachProxy of a missing sandbox: %v, want not_found", err)
		}
	})

	t.Run("connections_without_an_exec", func(t *testing.T) { runNetStreams(t, c, e.p, id, proxy) })

	t.Run("network_none_reaches_nothing_around_the_proxy", func(t *testing.T) {
		if !caps.Egress {
			t.Skip("the provider announces no egress")
		}
		// spec.egress makes a sandbox of network "none": egress holds only
		// if nothing in it reaches the test's host but through the proxy.
		ln, err := net.Listen("tcp", ":0")
		if err != nil {
			t.Fatal(err)
		}
		var accepted atomic.Int64
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				_ = c.Close()
			}
		}()
		defer ln.Close()
		port := ln.Addr().(*net.TCPAddr).Port
		targets := []string{"127.0.0.1"}
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() {
					targets = append(targets, ip.IP.String())
				}
			}
		}
		none := e.create(protocol.Spec{Network: "none"}, nil)
		script := fmt.Sprintf(`command -v wget >/dev/null || exit 77
for a in %s; do if wget -q -O - -T 5 "http://$a:%d/" >/dev/null 2>&1; then echo "reached $a"; else echo "failed $a"; fi; done`, strings.Join(targets, " "), port)
		out, errOut, st := runIn(t, e.p, none, provider.ExecRequest{Argv: []string{"sh", "-c", script}})
		if st.Code == 77 {
			t.Skip("no wget in the sandbox")
		}
		if st.Code != 0 || strings.Contains(out, "reached") || strings.Count(out, "failed") != len(targets) || accepted.Load() != 0 {
			t.Fatalf("from a sandbox of network none (exit %d, stderr %q, %d accepted):\n%s", st.Code, errOut, accepted.Load(), out)
		}
	})

	t.Run("relay_to_a_closed_port_fails_with_nothing_on_stdout", func(t *testing.T) {
		out, errOut, st := runIn(t, e.p, id, provider.ExecRequest{Argv: relayer.RelayCommand(3998), Stdin: true})
		if st.Code == 0 || out != "" || errOut == "" {
			t.Fatalf("exit %d, stdout %q, stderr %q: want a failure that says why", st.Code, out, errOut)
		}
	})
}

// proxyExec is a running ProxyCommand: its events and its verdict pipe.
type proxyExec struct {
	run    *running
	events *json.Decoder
}

func startProxy(t *testing.T, c context.Context, p provider.Provider, id string, argv []string) *proxyExec {
	t.Helper()
	proc, err := p.Exec(c, id, provider.ExecRequest{Argv: argv, Stdin: true})
	if err != nil {
		t.Fatalf("Exec(%q): %v", argv, err)
	}
	r := &running{proc: proc}
	r.readers.Add(1)
	go func() { defer r.readers.Done(); _, _ = io.Copy(&r.stderr, proc.Stderr()) }()
	px := &proxyExec{run: r, events: json.NewDecoder(bufio.NewReader(proc.Stdout()))}
	if ev := px.next(t); !ev.Ready {
		t.Fatalf("the proxy's first line is %+v, want ready (stderr %q)", ev, r.stderr.String())
	}
	t.Cleanup(func() { _ = proc.Stdin().Close() })
	return px
}

// next is the proxy's next line. The decoder reads in the test's
// goroutine: a proxy that says nothing fails the exec's own deadline.
func (px *proxyExec) next(t *testing.T) provider.ProxyEvent {
	t.Helper()
	var ev provider.ProxyEvent
	if err := px.events.Decode(&ev); err != nil {
		t.Fatalf("reading the proxy's line: %v (stderr %q)", err, px.run.stderr.String())
	}
	return ev
}

func (px *proxyExec) refuse(t *testing.T, id, msg string) {
	t.Helper()
	line, _ := json.Marshal(provider.ProxyVerdict{ID: id, Refusal: msg})
	if _, err := px.run.proc.Stdin().Write(append(line, '\n')); err != nil {
		t.Fatalf("writing the verdict: %v", err)
	}
}

// ProxyTalkScript is a sandbox shell script that sends request (printf's
// format) to the egress proxy on 127.0.0.1:3128 with nc and prints what
// comes back. busybox nc ends at its stdin's end, so stdin stays open (a
// fifo) until the proxy's side ends.
func ProxyTalkScript(request string) string {
	return `rm -f /tmp/nc-in /tmp/nc-out; mkfifo /tmp/nc-in || exit 1
nc 127.0.0.1 3128 < /tmp/nc-in > /tmp/nc-out & pid=$!
exec 3> /tmp/nc-in
printf '` + request + `' >&3
wait $pid
exec 3>&-
cat /tmp/nc-out`
}
