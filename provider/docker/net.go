package docker

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/keeperexec"
)

// The Provider embeds keeperexec.Relay: every sandbox has the keeper at
// keeperproto.Path, whatever its image, and its execs share the
// container's network namespace. A channel-mode sandbox's connections
// take the first path open of three:
//   - dialled by the resident itself inside the container's network
//     namespace (netdirect_linux.go): the engine on this machine, the
//     resident root and able to enter it; a plain socket, no copy through
//     the engine's attach stream;
//   - connection streams of its channel: the keeper carries each one
//     itself, no exec, no process per connection (a remote engine, no
//     root, --provider-opt forward=channel);
//   - the relay's exec: a sandbox on the exec path, a keeper without the
//     feature.
var (
	_ provider.Relayer       = (*Provider)(nil)
	_ provider.Dialer        = (*Provider)(nil)
	_ provider.ProxyAttacher = (*Provider)(nil)
)

// DialSandbox connects to 127.0.0.1:port inside a channel-mode sandbox:
// directly in its network namespace, or through its keeper
// (keeperexec.Dial); provider.ErrNoDial on the exec path or with a keeper
// that has no connection streams.
func (p *Provider) DialSandbox(ctx context.Context, sandboxID string, port int) (provider.Conn, error) {
	return p.netStream(ctx, sandboxID, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		func(c net.Conn) (provider.Conn, error) { return c.(*net.TCPConn), nil },
		func(ctx context.Context, conn *channel.Conn) (provider.Conn, error) {
			return keeperexec.Dial(ctx, conn, port)
		})
}

// AttachProxy joins the egress proxy's held connection id as the keeper's
// attach does: directly, by connecting to keeperproto.ProxySocket (an
// abstract socket, so one of the container's network namespace) and
// naming the connection; or through the sandbox's keeper
// (keeperexec.AttachProxy), as DialSandbox does a port.
func (p *Provider) AttachProxy(ctx context.Context, sandboxID, id string) (provider.Conn, error) {
	return p.netStream(ctx, sandboxID, "unix", keeperproto.ProxySocket,
		func(c net.Conn) (provider.Conn, error) {
			if _, err := io.WriteString(c, id+"\n"); err != nil {
				_ = c.Close()
				return nil, err
			}
			return c.(*net.UnixConn), nil
		},
		func(ctx context.Context, conn *channel.Conn) (provider.Conn, error) {
			return keeperexec.AttachProxy(ctx, conn, id)
		})
}

func (p *Provider) netStream(ctx context.Context, sandboxID, network, address string,
	direct func(net.Conn) (provider.Conn, error),
	open func(context.Context, *channel.Conn) (provider.Conn, error)) (provider.Conn, error) {
	if !p.known.has(sandboxID) {
		cctx, cancel := p.callCtx(ctx)
		_, err := p.inspectSandbox(cctx, sandboxID)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	if p.modeOf(sandboxID) != ExecModeChannel {
		p.netPaths.use(p.log, "the relay exec", "a sandbox on the exec path")
		return nil, provider.ErrNoDial
	}
	_, conn, err := p.channelFor(ctx, sandboxID)
	if err != nil {
		return nil, err
	}
	nc, why, err := p.dialDirect(ctx, sandboxID, conn, network, address)
	switch {
	case err == nil:
		p.netPaths.use(p.log, "the container's network namespace", "the engine is on this machine and the resident may enter it")
		return direct(nc)
	case !errors.Is(err, errNoDirect):
		return nil, err
	}
	p.netPaths.use(p.log, "the keeper channel's connection streams", why)
	var c provider.Conn
	err = p.whileRunning(ctx, sandboxID, false, func(ctx context.Context) (err error) {
		c, err = open(ctx, conn)
		return err
	})
	return c, err
}
