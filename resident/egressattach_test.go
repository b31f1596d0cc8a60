package resident

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// attachFake is egressFake with a provider.ProxyAttacher: AttachProxy
// hands the resident one end of a unix socket pair and the test the other
// (held), or says ErrNoDial (the attach exec runs), or fails.
type attachFake struct {
	*egressFake
	mode string // "join", "nodial" or "fail"
	held chan *net.UnixConn
}

var _ provider.ProxyAttacher = (*attachFake)(nil)

func (f *attachFake) AttachProxy(ctx context.Context, sandboxID, id string) (provider.Conn, error) {
	switch f.mode {
	case "nodial":
		return nil, fmt.Errorf("%w (not root)", provider.ErrNoDial)
	case "fail":
		return nil, protocol.Errorf(protocol.KindTransient, "the proxy's socket is gone")
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: "@resident-test-" + hex.EncodeToString(b[:]), Net: "unix"})
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	ours, err := net.DialUnix("unix", nil, ln.Addr().(*net.UnixAddr))
	if err != nil {
		return nil, err
	}
	theirs, err := ln.AcceptUnix()
	if err != nil {
		_ = ours.Close()
		return nil, err
	}
	f.held <- theirs
	return ours, nil
}

// pingServer answers "pong" to "ping", then reports what followed until
// the resident's half-close ("eof") on served.
func pingServer(t *testing.T) (string, int, chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	served := make(chan string, 2)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		got := make([]byte, 4)
		if _, err := io.ReadFull(c, got); err != nil {
			served <- "closed before ping: " + err.Error()
			return
		}
		served <- string(got)
		_, _ = io.WriteString(c, "pong")
		rest, _ := io.ReadAll(c)
		served <- "eof after " + strconv.Quote(string(rest))
	}()
	addr := ln.Addr().(*net.TCPAddr)
	return addr.IP.String(), addr.Port, served
}

func startAttachFake(t *testing.T, mode string, allow string) (*attachFake, *fakeProxy) {
	t.Helper()
	prov := &attachFake{egressFake: &egressFake{relayFake: newRelayFake()}, mode: mode, held: make(chan *net.UnixConn, 1)}
	h := startHost(t, prov)
	h.initialize(nil)
	var created protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{"egress": map[string]any{"allow": []string{allow}}}}, &created)
	return prov, prov.proxy
}

// TestEgressJoinsTheHeldConnectionWithoutAnAttachExec: with a
// ProxyAttacher the resident joins the held connection itself, both ways,
// and the sandbox client's half-close reaches the upstream.
func TestEgressJoinsTheHeldConnectionWithoutAnAttachExec(t *testing.T) {
	host, port, served := pingServer(t)
	prov, px := startAttachFake(t, "join", net.JoinHostPort(host, strconv.Itoa(port)))
	px.ask(t, "c1", host, port)
	held := <-prov.held
	defer held.Close()
	_, _ = io.WriteString(held, "ping")
	_ = held.CloseWrite()
	if got := <-served; got != "ping" {
		t.Fatalf("upstream read %q", got)
	}
	back, _ := io.ReadAll(held)
	if string(back) != "pong" {
		t.Fatalf("the sandbox side read %q", back)
	}
	if got := <-served; got != `eof after ""` {
		t.Fatalf("upstream then saw %s", got)
	}
	select {
	case a := <-px.attaches:
		t.Fatalf("an attach exec ran (%s) although the provider joined the connection", a.id)
	default:
	}
}

// TestEgressFallsBackToTheAttachExec: ErrNoDial runs the attach exec.
func TestEgressFallsBackToTheAttachExec(t *testing.T) {
	host, port, _ := pingServer(t)
	_, px := startAttachFake(t, "nodial", net.JoinHostPort(host, strconv.Itoa(port)))
	px.ask(t, "c1", host, port)
	if a := <-px.attaches; a.id != "c1" {
		t.Fatalf("attach exec for %q, want c1", a.id)
	}
}

// TestEgressAttachFailureClosesTheUpstream: an AttachProxy that fails ends
// the dialled connection at once, answers the sandbox's client with a
// refusal that says why (not the proxy's 504 a minute later), and runs no
// attach exec.
func TestEgressAttachFailureClosesTheUpstream(t *testing.T) {
	host, port, served := pingServer(t)
	_, px := startAttachFake(t, "fail", net.JoinHostPort(host, strconv.Itoa(port)))
	px.ask(t, "c1", host, port)
	if got := <-served; !strings.HasPrefix(got, "closed before ping") {
		t.Fatalf("upstream saw %q, want the connection closed", got)
	}
	line, err := px.verdicts.ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":"c1"`) || !strings.Contains(line, "could not carry the connection") || !strings.Contains(line, "the proxy's socket is gone") {
		t.Fatalf("verdict %q (%v), want a refusal saying why", line, err)
	}
	select {
	case a := <-px.attaches:
		t.Fatalf("an attach exec ran (%s) after the provider's failure", a.id)
	default:
	}
}
