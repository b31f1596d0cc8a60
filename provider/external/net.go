package external

import (
	"context"
	"strconv"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/wire"
)

var _ provider.Relayer = (*Provider)(nil)

// askNetCommands asks a provider that announces port_forward or egress for
// its commands (net/commands), once, in the first handshake: the session's
// description stays the first one. A provider that answers with an error
// (method-not-found included) or unusable templates has none: both
// capabilities are then withdrawn, with a warning, and the resident never
// asks for a forward or egress of it.
func (p *Provider) askNetCommands(ctx context.Context, c *child, caps protocol.Capabilities) *wire.NetCommands {
	if !caps.PortForward && !caps.Egress {
		return nil
	}
	var n wire.NetCommands
	err := p.callOn(ctx, c, wire.MethodNetCommands, wire.Empty{}, &n)
	if err == nil {
		err = n.Check()
	}
	if err != nil {
		p.logger().Warn("the provider announces port_forward or egress but gives no commands to carry them; both are off", errorField(err))
		return nil
	}
	return &n
}

// RelayCommand is the provider's relay template for port. It is asked for
// only when Info announces port_forward or egress, so p.relay is set.
func (p *Provider) RelayCommand(port int) []string {
	if p.relay == nil {
		return nil
	}
	return wire.Fill(p.relay.Relay, wire.PlaceholderPort, strconv.Itoa(port))
}

// ProxyCommand is the provider's proxy template for listen.
func (p *Provider) ProxyCommand(listen string) []string {
	if p.relay == nil {
		return nil
	}
	return wire.Fill(p.relay.Proxy, wire.PlaceholderListen, listen)
}

// AttachCommand is the provider's attach template for id.
func (p *Provider) AttachCommand(id string) []string {
	if p.relay == nil {
		return nil
	}
	return wire.Fill(p.relay.Attach, wire.PlaceholderID, id)
}
