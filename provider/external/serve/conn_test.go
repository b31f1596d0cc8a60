package serve

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// dialer is a Go provider whose sandbox is the test's own loopback: every
// DialSandbox reaches addr, after hold (when set) is closed.
type dialer struct {
	provider.Provider // nil: only what serve calls here is implemented
	addr              string
	hold              chan struct{}
	dialing           chan struct{} // when set, gets one value as each dial starts
}

func (d *dialer) Info() provider.Info {
	return provider.Info{Name: "dialer", Capabilities: protocol.Capabilities{PortForward: true}}
}
func (d *dialer) Secrets() provider.SecretPolicy      { return provider.SecretPolicy{} }
func (d *dialer) OnUnauthorized(func(string))         {}
func (d *dialer) RelayCommand(port int) []string      { return []string{"relay", itoa(port)} }
func (d *dialer) ProxyCommand(listen string) []string { return []string{"proxy", listen} }
func (d *dialer) AttachCommand(id string) []string    { return []string{"attach", id} }
func itoa(n int) string                               { b, _ := json.Marshal(n); return string(b) }
func (d *dialer) Close() error                        { return nil }
func (d *dialer) DialSandbox(ctx context.Context, _ string, _ int) (provider.Conn, error) {
	if d.dialing != nil {
		d.dialing <- struct{}{}
	}
	if d.hold != nil {
		<-d.hold
	}
	c, err := net.Dial("tcp", d.addr)
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

// session serves prov in process and is the resident's end of it.
type session struct {
	conn   *jsonrpc2.Conn
	stream *wire.Stream
	mu     sync.Mutex
	data   map[string][]byte
	eof    map[string]chan struct{}
}

func open(t *testing.T, prov provider.Provider) *session {
	t.Helper()
	toServer, fromResident := io.Pipe()
	toResident, fromServer := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = Serve(ctx, toServer, fromServer, prov, zap.NewNop())
	}()
	s := &session{data: map[string][]byte{}, eof: map[string]chan struct{}{"c1": make(chan struct{})}}
	s.stream = wire.NewStream(toResident, fromResident, closers{fromResident, toResident}, 1<<20)
	s.stream.OnData = func(id string, b []byte) {
		s.mu.Lock()
		s.data[id] = append(s.data[id], b...)
		s.mu.Unlock()
	}
	s.conn = jsonrpc2.NewConn(context.Background(), s.stream, jsonrpc2.HandlerWithError(func(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		var m wire.ConnData
		if req.Method == wire.NotifyConnData && json.Unmarshal(*req.Params, &m) == nil && m.EOF {
			close(s.eof[m.ConnID])
		}
		return nil, nil
	}))
	t.Cleanup(func() {
		_ = s.conn.Close()
		cancel()
		_ = toServer.Close()
		<-served
	})
	var res wire.InitializeResult
	if err := s.conn.Call(ctx, wire.MethodInitialize, wire.InitializeParams{ProtocolVersion: wire.Version, ConnWindowBytes: 1 << 16}, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Connections {
		t.Fatalf("a Dialer served announces no connections: %+v", res)
	}
	return s
}

type closers []io.Closer

func (c closers) Close() error {
	for _, x := range c {
		_ = x.Close()
	}
	return nil
}

// echo answers each connection with what it read, after the client's
// half-close, then ends it; closed gets each connection's end.
func echo(t *testing.T) (string, chan []byte) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				got <- b
				_, _ = c.Write(append([]byte("echo:"), b...))
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return ln.Addr().String(), got
}

// TestServedConnectionCarriesBothWays: bytes as data frames reach the
// sandbox side, its answer comes back as data frames, and the half-closes
// cross both ways.
func TestServedConnectionCarriesBothWays(t *testing.T) {
	addr, got := echo(t)
	s := open(t, &dialer{addr: addr})
	ctx := context.Background()
	if err := s.conn.Call(ctx, wire.MethodConnOpen, wire.ConnOpenParams{ConnID: "c1", SandboxID: "sb", Port: 80}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.stream.WriteData("c1", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := s.conn.Notify(ctx, wire.NotifyConnData, wire.ConnData{ConnID: "c1", EOF: true}); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != "hello" {
		t.Fatalf("the sandbox side read %q", b)
	}
	<-s.eof["c1"]
	s.mu.Lock()
	defer s.mu.Unlock()
	if string(s.data["c1"]) != "echo:hello" {
		t.Fatalf("the resident read %q", s.data["c1"])
	}
}

// TestServedConnectionClosedWhileOpening: a conn/close that comes while
// its conn/open still dials (the resident gave up on it) closes what the
// dial opens, and the open answers cancelled.
func TestServedConnectionClosedWhileOpening(t *testing.T) {
	addr, got := echo(t)
	hold, dialing := make(chan struct{}), make(chan struct{}, 1)
	s := open(t, &dialer{addr: addr, hold: hold, dialing: dialing})
	ctx := context.Background()
	call, err := s.conn.DispatchCall(ctx, wire.MethodConnOpen, wire.ConnOpenParams{ConnID: "c2", SandboxID: "sb", Port: 80})
	if err != nil {
		t.Fatal(err)
	}
	// Requests are served each on its own goroutine: wait for the dial to
	// start rather than probe with more opens, one of which could be the
	// one served first and hold in its dial.
	<-dialing
	err = s.conn.Call(ctx, wire.MethodConnOpen, wire.ConnOpenParams{ConnID: "c2", SandboxID: "sb", Port: 80}, nil)
	if e, ok := err.(*jsonrpc2.Error); !ok || e.Code != protocol.CodeOf(protocol.Errorf(protocol.KindConflict, "")) {
		t.Fatalf("a second conn/open of an id being dialled answered %v, want conflict", err)
	}
	if err := s.conn.Notify(ctx, wire.NotifyConnClose, wire.ConnClose{ConnID: "c2"}); err != nil {
		t.Fatal(err)
	}
	// The notification is handled on the reader, before any later message:
	// one more request's answer means it was taken.
	_ = s.conn.Call(ctx, wire.MethodConnOpen, wire.ConnOpenParams{}, nil)
	close(hold)
	err = call.Wait(ctx, nil)
	e, ok := err.(*jsonrpc2.Error)
	if !ok || e.Data == nil {
		t.Fatalf("the open answered %v", err)
	}
	var d wire.ErrorData
	if json.Unmarshal(*e.Data, &d) != nil || d.Kind != protocol.KindCancelled {
		t.Fatalf("the open answered %v (%s)", err, *e.Data)
	}
	if b := <-got; len(b) != 0 {
		t.Fatalf("the sandbox side read %q from a connection closed before it opened", b)
	}
}

// TestServedConnOpenRefusesBadParams: the params are checked before any dial.
func TestServedConnOpenRefusesBadParams(t *testing.T) {
	s := open(t, &dialer{addr: "127.0.0.1:1"})
	err := s.conn.Call(context.Background(), wire.MethodConnOpen, wire.ConnOpenParams{ConnID: "c3", SandboxID: "sb"}, nil)
	e, ok := err.(*jsonrpc2.Error)
	var d wire.ErrorData
	if !ok || e.Data == nil || json.Unmarshal(*e.Data, &d) != nil || d.Kind != protocol.KindInvalidRequest {
		t.Fatalf("conn/open without port or proxy_id: %v", err)
	}
}

// TestServedConnOpenWithoutAttacherSaysUseRelay: a provider that cannot
// join the proxy's connections without an exec says so, with use_relay.
func TestServedConnOpenWithoutAttacherSaysUseRelay(t *testing.T) {
	s := open(t, &dialer{addr: "127.0.0.1:1"})
	err := s.conn.Call(context.Background(), wire.MethodConnOpen, wire.ConnOpenParams{ConnID: "c4", SandboxID: "sb", ProxyID: "p1"}, nil)
	e, ok := err.(*jsonrpc2.Error)
	var d wire.ErrorData
	if !ok || e.Data == nil || json.Unmarshal(*e.Data, &d) != nil || !d.UseRelay {
		t.Fatalf("conn/open of a proxy connection without ProxyAttacher: %v", err)
	}
}
