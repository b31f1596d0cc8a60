package external

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/wire"
)

// connFakeMain is a provider in a few lines of protocol that announces
// connection streams and misbehaves on conn/open as its mode says:
// conn-relay answers use_relay, conn-refused a transient refusal,
// conn-flood sends more than the window before its answer, conn-exit
// answers and exits at the first byte it gets, conn-hang never answers (and notes the conn/close it
// gets in the state directory), conn-none announces no connections at all.
func connFakeMain(mode string) int {
	stream := wire.NewStream(os.Stdin, os.Stdout, os.Stdout, 16<<20)
	stream.OnData = func(string, []byte) {
		if mode == "conn-exit" {
			os.Exit(0) // the first byte from the resident ends the provider
		}
	}
	state := os.Getenv("RESIDENT_EXTERNAL_FAKE_STATE")
	wireErr := func(kind protocol.Kind, msg string, relay bool) error {
		raw, _ := json.Marshal(wire.ErrorData{Kind: kind, UseRelay: relay})
		data := json.RawMessage(raw)
		return &jsonrpc2.Error{Code: -32000, Message: msg, Data: &data}
	}
	handler := jsonrpc2.HandlerWithError(func(ctx context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		switch req.Method {
		case wire.MethodInitialize:
			return wire.InitializeResult{ProtocolVersion: wire.Version, Name: "connfake", Version: "1",
				Capabilities: protocol.Capabilities{PortForward: true, Egress: true}, Connections: mode != "conn-none",
				Secrets: wire.Secrets{EnvPrefixes: []string{}, TokenPatterns: []wire.TokenPattern{}}}, nil
		case wire.MethodNetCommands:
			return wire.NetCommands{Relay: []string{"relay", "{port}"}, Proxy: []string{"proxy", "{listen}"}, Attach: []string{"attach", "{id}"}}, nil
		case wire.NotifyConnClose:
			var m wire.ConnClose
			_ = json.Unmarshal(*req.Params, &m)
			_ = os.WriteFile(filepath.Join(state, "closed-"+m.ConnID), nil, 0o600)
			return nil, nil
		case wire.MethodConnOpen:
			var p wire.ConnOpenParams
			_ = json.Unmarshal(*req.Params, &p)
			switch mode {
			case "conn-relay":
				return nil, wireErr(protocol.KindInvalidRequest, "no way in but an exec", true)
			case "conn-refused":
				return nil, wireErr(protocol.KindTransient, "connect inside the sandbox: connection refused", false)
			case "conn-flood":
				chunk := make([]byte, wire.ConnChunk)
				for range wire.DefaultConnWindow/wire.ConnChunk + 1 {
					_ = stream.WriteData(p.ConnID, chunk)
				}
				return wire.Empty{}, nil
			case "conn-exit":
				_ = stream.WriteData(p.ConnID, []byte("last words"))
				return wire.Empty{}, nil
			case "conn-hang":
				<-ctx.Done()
				select {} // never answers, even cancelled
			}
		case wire.MethodAuthApply, wire.MethodShutdown:
			return wire.Empty{}, nil
		}
		if req.Notif {
			return nil, nil
		}
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "unknown method " + req.Method}
	})
	conn := jsonrpc2.NewConn(context.Background(), stream, jsonrpc2.AsyncHandler(handler))
	<-conn.DisconnectNotify()
	return 0
}

func openConnFake(t *testing.T, mode string) *Provider {
	t.Helper()
	p, err := openFake(t, mode, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.(*Provider)
}

// TestConnStreamsFallBackToTheRelay: a provider without connections (an
// older one) and one that answers use_relay both leave the resident to
// its relay (provider.ErrNoDial), which it announces as before.
func TestConnStreamsFallBackToTheRelay(t *testing.T) {
	for _, mode := range []string{"conn-none", "conn-relay"} {
		t.Run(mode, func(t *testing.T) {
			p := openConnFake(t, mode)
			if c := p.Info().Capabilities; !c.PortForward || !c.Egress {
				t.Fatalf("capabilities %+v, want port_forward and egress kept", c)
			}
			if _, err := p.DialSandbox(bg(t), "sb", 8080); !errors.Is(err, provider.ErrNoDial) {
				t.Fatalf("DialSandbox: %v, want ErrNoDial", err)
			}
			if _, err := p.AttachProxy(bg(t), "sb", "p1"); !errors.Is(err, provider.ErrNoDial) {
				t.Fatalf("AttachProxy: %v, want ErrNoDial", err)
			}
		})
	}
}

// TestConnStreamRefusedKeepsItsKind: the provider's refusal comes back with
// its kind and message, not as a fallback.
func TestConnStreamRefusedKeepsItsKind(t *testing.T) {
	p := openConnFake(t, "conn-refused")
	_, err := p.DialSandbox(bg(t), "sb", 8080)
	if protocol.KindOf(err) != protocol.KindTransient || errors.Is(err, provider.ErrNoDial) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("DialSandbox: %v", err)
	}
}

// TestConnStreamPastItsWindowIsReset: data past the window resets the
// connection (the provider is told) instead of growing a buffer.
func TestConnStreamPastItsWindowIsReset(t *testing.T) {
	p := openConnFake(t, "conn-flood")
	conn, err := p.DialSandbox(bg(t), "sb", 8080)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = io.Copy(io.Discard, conn)
	if protocol.KindOf(err) != protocol.KindTransient || !strings.Contains(err.Error(), "window") {
		t.Fatalf("reading a flooded connection: %v", err)
	}
	awaitFile(t, filepath.Join(os.Getenv("RESIDENT_EXTERNAL_FAKE_STATE"), "closed-c1"))
}

// TestConnStreamEndsTransientWhenTheProviderExits: a provider that dies
// under a connection resets it, after what it sent.
func TestConnStreamEndsTransientWhenTheProviderExits(t *testing.T) {
	p := openConnFake(t, "conn-exit")
	conn, err := p.DialSandbox(bg(t), "sb", 8080)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("bye")); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn)
	if protocol.KindOf(err) != protocol.KindTransient || string(got) != "last words" {
		t.Fatalf("read %q, %v", got, err)
	}
	if _, err := conn.Write([]byte("x")); err == nil {
		t.Fatal("a write to a connection of a dead provider went through")
	}
}

// TestConnOpenCancelledTellsTheProvider: a conn/open the host gives up on
// is cancelled, and the provider hears conn/close for it (it may have
// connected after all).
func TestConnOpenCancelledTellsTheProvider(t *testing.T) {
	p := openConnFake(t, "conn-hang")
	ctx, cancel := context.WithCancel(bg(t))
	done := make(chan error, 1)
	go func() { _, err := p.DialSandbox(ctx, "sb", 8080); done <- err }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled DialSandbox: %v", err)
	}
	awaitFile(t, filepath.Join(os.Getenv("RESIDENT_EXTERNAL_FAKE_STATE"), "closed-c1"))
}

// awaitFile waits for path, as long as the test may run.
func awaitFile(t *testing.T, path string) {
	t.Helper()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case <-bg(t).Done():
			t.Fatalf("%s never appeared", path)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
