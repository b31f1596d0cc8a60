package resident

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// relayFake is the fake provider with a Relayer: its "sandbox network" is
// the test's loopback, so RelayCommand(port) connects to a listener the
// test holds, standing in for a server inside the sandbox.
type relayFake struct {
	*fakeProvider
	relays atomic.Int64 // relay execs started
	gone   atomic.Bool  // every exec answers not_found, as for a removed sandbox
}

var _ provider.Relayer = (*relayFake)(nil)

func newRelayFake() *relayFake { return &relayFake{fakeProvider: newFake()} }

func (f *relayFake) Info() provider.Info {
	info := f.fakeProvider.Info()
	info.Capabilities.PortForward, info.Capabilities.Egress = true, true
	return info
}

func (f *relayFake) RelayCommand(port int) []string      { return []string{"relay", strconv.Itoa(port)} }
func (f *relayFake) ProxyCommand(listen string) []string { return []string{"proxy", listen} }
func (f *relayFake) AttachCommand(id string) []string    { return []string{"attach", id} }

func (f *relayFake) Exec(ctx context.Context, id string, req provider.ExecRequest) (provider.Process, error) {
	if f.gone.Load() {
		return nil, protocol.Errorf(protocol.KindNotFound, "sandbox %q not found", id)
	}
	if req.Argv[0] != "relay" {
		return f.fakeProvider.Exec(ctx, id, req)
	}
	f.relays.Add(1)
	conn, err := net.Dial("tcp", "127.0.0.1:"+req.Argv[1])
	if err != nil {
		return nil, err
	}
	p := &relayProcess{conn: conn.(*net.TCPConn), done: make(chan struct{})}
	var stdoutW *io.PipeWriter
	p.stdout, stdoutW = io.Pipe()
	go func() {
		_, _ = io.Copy(stdoutW, p.conn)
		_ = stdoutW.Close()
		close(p.done)
	}()
	context.AfterFunc(ctx, func() { _ = p.conn.Close() }) // the kill
	return p, nil
}

type relayProcess struct {
	conn   *net.TCPConn
	stdout *io.PipeReader
	done   chan struct{}
}

func (p *relayProcess) Stdout() io.Reader     { return p.stdout }
func (p *relayProcess) Stderr() io.Reader     { return eofReader{} }
func (p *relayProcess) Stdin() io.WriteCloser { return halfCloseWriter{p.conn} }
func (p *relayProcess) Wait() (provider.ExitStatus, error) {
	<-p.done
	_ = p.conn.Close()
	return provider.ExitStatus{}, nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

type halfCloseWriter struct{ c *net.TCPConn }

func (w halfCloseWriter) Write(b []byte) (int, error) { return w.c.Write(b) }
func (w halfCloseWriter) Close() error                { return w.c.CloseWrite() }

// echoServer answers each connection with "<prefix><what it read>" once
// the client half-closes, and counts connections.
func echoServer(t *testing.T, prefix string) (int, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	var conns atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				got, _ := io.ReadAll(c)
				_, _ = fmt.Fprintf(c, "%s%s", prefix, got)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, &conns
}

// roundTrip sends msg over a new connection to address, half-closes, and
// returns the whole answer.
func roundTrip(address, msg string) (string, error) {
	c, err := net.Dial("tcp", address)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, err := io.WriteString(c, msg); err != nil {
		return "", err
	}
	_ = c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(c)
	return string(got), err
}

func TestForwardCarriesEachConnectionOverARelayExec(t *testing.T) {
	prov := newRelayFake()
	h := startHost(t, prov)
	init := h.initialize(nil)
	if !init.Capabilities.PortForward || !init.Capabilities.Egress {
		t.Fatalf("capabilities %+v: a provider with a Relayer that says so has port_forward and egress", init.Capabilities)
	}
	port, _ := echoServer(t, "echo:")
	var created protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{}}, &created)
	var fwd protocol.ForwardPortResult
	h.call(protocol.MethodForwardPort, map[string]any{"sandbox_id": created.SandboxID, "port": port}, &fwd)

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := fmt.Sprintf("hello-%d", i)
			if got, err := roundTrip(fwd.Address, msg); err != nil || got != "echo:"+msg {
				t.Errorf("connection %d read %q (%v)", i, got, err)
			}
		}()
	}
	wg.Wait()
	if n := prov.relays.Load(); n != 20 {
		t.Fatalf("%d relay execs for 20 connections", n)
	}

	var closed protocol.PortCloseResult
	h.call(protocol.MethodPortClose, map[string]any{"forward_id": fwd.ForwardID}, &closed)
	if !closed.Existed {
		t.Fatal("port/close of an open forward said existed=false")
	}
	waitFor(t, "the closed forward to refuse connections", func() bool {
		_, err := roundTrip(fwd.Address, "x")
		return err != nil
	})
}

func TestForwardEndsWhenItsSandboxIsGone(t *testing.T) {
	prov := newRelayFake()
	h := startHost(t, prov)
	h.initialize(nil)
	port, _ := echoServer(t, "")
	var created protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{}}, &created)

	// Terminate ends the sandbox's forwards.
	var fwd protocol.ForwardPortResult
	h.call(protocol.MethodForwardPort, map[string]any{"sandbox_id": created.SandboxID, "port": port}, &fwd)
	h.call(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": created.SandboxID}, nil)
	waitFor(t, "terminate to end the forward", func() bool { _, err := roundTrip(fwd.Address, "x"); return err != nil })
	var closed protocol.PortCloseResult
	h.call(protocol.MethodPortClose, map[string]any{"forward_id": fwd.ForwardID}, &closed)
	if closed.Existed {
		t.Fatal("the forward of a terminated sandbox is still open")
	}

	// A sandbox removed behind the session's back: the first relay the
	// provider refuses as not_found ends the forward.
	h.call(protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{}}, &created)
	h.call(protocol.MethodForwardPort, map[string]any{"sandbox_id": created.SandboxID, "port": port}, &fwd)
	prov.gone.Store(true)
	_, _ = roundTrip(fwd.Address, "x")
	waitFor(t, "a not_found relay to end the forward", func() bool { _, err := roundTrip(fwd.Address, "x"); return err != nil })
}

func TestForwardAndEgressNeedARelayer(t *testing.T) {
	h := startHost(t, newFake())
	init := h.initialize(nil)
	if init.Capabilities.PortForward || init.Capabilities.Egress {
		t.Fatalf("a provider without a Relayer announces %+v", init.Capabilities)
	}
	var created protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{}}, &created)
	h.callErr(protocol.MethodForwardPort, map[string]any{"sandbox_id": created.SandboxID, "port": 80}, protocol.KindInvalidRequest)
	h.callErr(protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{"egress": map[string]any{"allow": []string{"a.example:443"}}}}, protocol.KindInvalidRequest)
}

func TestEgressSpecIsChecked(t *testing.T) {
	h := startHost(t, newRelayFake())
	h.initialize(nil)
	for name, spec := range map[string]map[string]any{
		"empty":         {"egress": map[string]any{"allow": []string{}}},
		"bad rule":      {"egress": map[string]any{"allow": []string{"pypi.org"}}},
		"bridge":        {"network": "bridge", "egress": map[string]any{"allow": []string{"pypi.org:443"}}},
		"own proxy env": {"env": map[string]string{"https_proxy": "x"}, "egress": map[string]any{"allow": []string{"pypi.org:443"}}},
		"unknown key":   {"egress": map[string]any{"allow": []string{"pypi.org:443"}, "deny": []string{}}},
	} {
		if msg := h.callErr(protocol.MethodSandboxCreate, map[string]any{"spec": spec}, protocol.KindInvalidRequest); msg == "" {
			t.Errorf("%s: no message", name)
		}
	}
}
