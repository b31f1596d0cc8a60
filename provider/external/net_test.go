package external

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/serve"
	"github.com/resident-dev/resident/provider/external/wire"
)

// netFakeMain is a provider in a few lines of protocol that announces
// port_forward and egress but cannot back them: net/commands is unknown to
// it (net-no-commands) or answers templates without their placeholders
// (net-bad-commands).
func netFakeMain(mode string) int {
	stream := wire.NewStream(os.Stdin, os.Stdout, os.Stdout, 16<<20)
	handler := jsonrpc2.HandlerWithError(func(ctx context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		switch req.Method {
		case wire.MethodInitialize:
			return wire.InitializeResult{ProtocolVersion: wire.Version, Name: "netfake", Version: "1",
				Capabilities: protocol.Capabilities{PortForward: true, Egress: true},
				Secrets:      wire.Secrets{EnvPrefixes: []string{}, TokenPatterns: []wire.TokenPattern{}}}, nil
		case wire.MethodNetCommands:
			if mode == "net-bad-commands" {
				return wire.NetCommands{Relay: []string{"relay", "-port", "8080"}, Proxy: []string{"proxy"}, Attach: []string{"attach"}}, nil
			}
		case wire.MethodAuthApply, wire.MethodShutdown:
			return wire.Empty{}, nil
		}
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "unknown method " + req.Method}
	})
	conn := jsonrpc2.NewConn(context.Background(), stream, handler)
	<-conn.DisconnectNotify()
	return 0
}

// TestAnnouncedNetWithoutCommandsIsWithdrawn: a provider that announces
// port_forward and egress but has no net/commands, or answers unusable
// templates, gets neither capability, with a warning saying why.
func TestAnnouncedNetWithoutCommandsIsWithdrawn(t *testing.T) {
	for _, mode := range []string{"net-no-commands", "net-bad-commands"} {
		t.Run(mode, func(t *testing.T) {
			core, logs := observer.New(zap.InfoLevel)
			p, err := openFake(t, mode, 30*time.Second, zap.New(core))
			if err != nil {
				t.Fatal(err)
			}
			if c := p.Info().Capabilities; c.PortForward || c.Egress {
				t.Fatalf("capabilities port_forward=%v egress=%v, want both withdrawn", c.PortForward, c.Egress)
			}
			if argv := p.(provider.Relayer).RelayCommand(80); argv != nil {
				t.Fatalf("RelayCommand without commands = %q, want nil", argv)
			}
			if logs.FilterMessageSnippet("gives no commands to carry them").Len() != 1 {
				t.Fatalf("no warning about the withdrawn capabilities: %v", logs.All())
			}
		})
	}
}

// TestServedWithoutRelayerAnnouncesNoNet: a served Go provider that is not
// a provider.Relayer (local behind a wrapper that hides it) describes
// neither capability, and net/commands says it has none.
func TestServedWithoutRelayerAnnouncesNoNet(t *testing.T) {
	p, err := openFake(t, "plain", 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Info().Capabilities; c.PortForward || c.Egress {
		t.Fatalf("capabilities port_forward=%v egress=%v through a provider without Relayer", c.PortForward, c.Egress)
	}
	err = p.(*Provider).call(bg(t), wire.MethodNetCommands, wire.Empty{}, &wire.NetCommands{})
	if protocol.KindOf(err) != protocol.KindInvalidRequest || !strings.Contains(err.Error(), "carries no connections") {
		t.Fatalf("net/commands of a provider without Relayer: %v", err)
	}
}

// relayerOf is a Relayer of fixed commands, for the serve side's templates.
type relayerOf struct{ relay func(int) []string }

func (r relayerOf) RelayCommand(port int) []string { return r.relay(port) }
func (relayerOf) ProxyCommand(listen string) []string {
	return []string{"/k", "proxy", "-listen", listen}
}
func (relayerOf) AttachCommand(id string) []string { return []string{"/k", "attach", "-id=" + id} }

// TestNetCommandsTemplates: a Relayer's commands become templates that
// fill back to the same commands, for any port; a relay command that is
// not a function of the port alone is refused.
func TestNetCommandsTemplates(t *testing.T) {
	good := relayerOf{relay: func(port int) []string {
		return []string{"/k", "relay", "-port", strconv.Itoa(port), "--to=127.0.0.1:" + strconv.Itoa(port)}
	}}
	n, err := serve.NetCommands(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, port := range []int{1, 80, 47231, 65535} {
		if got, want := wire.Fill(n.Relay, wire.PlaceholderPort, strconv.Itoa(port)), good.RelayCommand(port); !slices.Equal(got, want) {
			t.Errorf("relay for %d = %q, want %q", port, got, want)
		}
	}
	if got := wire.Fill(n.Attach, wire.PlaceholderID, "c-1"); !slices.Equal(got, []string{"/k", "attach", "-id=c-1"}) {
		t.Errorf("attach = %q", got)
	}
	if got := wire.Fill(n.Proxy, wire.PlaceholderListen, "127.0.0.1:3128"); !slices.Equal(got, []string{"/k", "proxy", "-listen", "127.0.0.1:3128"}) {
		t.Errorf("proxy = %q", got)
	}
	for name, relay := range map[string]func(int) []string{
		"ignores the port": func(int) []string { return []string{"/k", "relay", "-port", "80"} },
		"length varies":    func(port int) []string { return make([]string, port%3+1) },
		"port doubled":     func(port int) []string { return []string{"/k", strconv.Itoa(port * 2)} },
	} {
		if _, err := serve.NetCommands(relayerOf{relay: relay}); err == nil {
			t.Errorf("%s: NetCommands accepted it", name)
		}
	}
	data, _ := json.Marshal(n)
	if strings.Contains(string(data), strconv.Itoa(47231)) {
		t.Errorf("a sentinel port leaked into the templates: %s", data)
	}
}
