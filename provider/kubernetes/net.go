package kubernetes

import (
	"context"
	"errors"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/keeperexec"
)

// Port forwards and egress (issue 20) go through the pod's keeper, with
// the pod's own network "none" (its deny-all NetworkPolicy) untouched: the
// resident listens on its machine's loopback and dials the allowed hosts
// itself, and only the keeper, inside the pod, touches the pod's loopback.
// Every container of a pod shares one network namespace, so a server one
// exec starts is on the loopback the next one (and the keeper) reaches.
//
//   - A channel pod (the default): each connection is a connection stream
//     of the channel the provider holds over the pod's attach stream
//     (keeperexec.Dial, keeperexec.AttachProxy): no API server request and
//     no process per connection, each stream with its own credit.
//   - A pod without the channel (--provider-opt exec=exec, or one an older
//     resident made): provider.ErrNoDial, and the resident runs the
//     keeper's relay (Relayer) through one exec subresource stream per
//     connection.
var (
	_ provider.Relayer       = (*Provider)(nil)
	_ provider.Dialer        = (*Provider)(nil)
	_ provider.ProxyAttacher = (*Provider)(nil)
)

// RelayCommand, ProxyCommand and AttachCommand are the keeper's (every
// sandbox container has it at keeperproto.Path).
func (p *Provider) RelayCommand(port int) []string      { return keeperexec.RelayCommand(port) }
func (p *Provider) ProxyCommand(listen string) []string { return keeperexec.ProxyCommand(listen) }
func (p *Provider) AttachCommand(id string) []string    { return keeperexec.AttachCommand(id) }

// netCapabilities sets what Info announces of the network: port_forward
// always (a forward reaches only the pod's own loopback, whatever the
// plugin); egress only where NetworkPolicy is enforced, since the pod's
// deny-all policy is all that keeps its programs from going around the
// proxy.
func (p *Provider) netCapabilities(c *protocol.Capabilities) {
	c.PortForward = true
	c.Egress = p.enforced
}

// DialSandbox connects to 127.0.0.1:port inside a channel pod as a
// connection stream of its keeper channel; provider.ErrNoDial for a pod
// without the channel (the resident runs RelayCommand instead).
func (p *Provider) DialSandbox(ctx context.Context, sandboxID string, port int) (provider.Conn, error) {
	return p.netStream(ctx, sandboxID, func(ctx context.Context, conn *channel.Conn) (provider.Conn, error) {
		return keeperexec.Dial(ctx, conn, port)
	})
}

// AttachProxy joins the egress proxy's held connection id as a connection
// stream of the pod's keeper channel, as DialSandbox does a port.
func (p *Provider) AttachProxy(ctx context.Context, sandboxID, id string) (provider.Conn, error) {
	return p.netStream(ctx, sandboxID, func(ctx context.Context, conn *channel.Conn) (provider.Conn, error) {
		return keeperexec.AttachProxy(ctx, conn, id)
	})
}

// netStream opens one connection stream on the pod's channel. A refusal
// the keeper gave (nothing listens on the port, no such held connection)
// is its own answer: the pod runs. Any other failure (the channel broke,
// the attach stream could not open) says what the pod's state says:
// not_found when it is gone, conflict when it no longer runs.
func (p *Provider) netStream(ctx context.Context, sandboxID string, open func(context.Context, *channel.Conn) (provider.Conn, error)) (provider.Conn, error) {
	if _, gone := p.terminated.Load(sandboxID); gone || !validID(sandboxID) {
		return nil, notFound(sandboxID)
	}
	if !p.channel {
		return nil, provider.ErrNoDial
	}
	pc, ok, err := p.channelFor(ctx, sandboxID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, provider.ErrNoDial
	}
	c, err := open(ctx, pc.conn)
	var refused *channel.NetError
	switch {
	case err == nil:
		return c, nil
	case errors.Is(err, provider.ErrNoDial), errors.As(err, &refused):
		return nil, err
	}
	return nil, p.explainExecFailure(ctx, sandboxID, err)
}
