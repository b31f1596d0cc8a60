//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/internal/netns"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/keeperexec"
)

var (
	_ provider.Dialer        = (*Provider)(nil)
	_ provider.ProxyAttacher = (*Provider)(nil)
)

// DialSandbox connects to 127.0.0.1:port in the sandbox's network
// namespace. As root the resident dials it itself: one locked thread
// enters the namespace of the sandbox's keeper (through its pidfd), opens
// the socket, and goes back, so a forwarded connection costs no exec and
// no copy through the keeper. Without root (no CAP_SYS_ADMIN over the
// namespace) the sandbox's keeper carries it as a connection stream of
// its channel (keeperexec.Dial), still without an exec; without isolation,
// or with a keeper that has no connection streams, it is
// provider.ErrNoDial and the resident runs the keeper's relay instead.
func (p *Provider) DialSandbox(ctx context.Context, id string, port int) (provider.Conn, error) {
	if err := p.Start(); err != nil {
		return nil, err
	}
	c, ch, err := p.dialIn(ctx, id, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	switch {
	case err != nil:
		return nil, err
	case ch != nil:
		return keeperexec.Dial(ctx, ch, port)
	}
	return c.(*net.TCPConn), nil
}

// AttachProxy joins the egress proxy's held connection connID as the
// keeper's attach does: it connects to keeperproto.ProxySocket, an
// abstract socket and so one of the sandbox's network namespace, and
// names the connection; without root, the keeper does (a connection
// stream). Where DialSandbox cannot, neither can this.
func (p *Provider) AttachProxy(ctx context.Context, id, connID string) (provider.Conn, error) {
	if err := p.Start(); err != nil {
		return nil, err
	}
	c, ch, err := p.dialIn(ctx, id, "unix", keeperproto.ProxySocket)
	switch {
	case err != nil:
		return nil, err
	case ch != nil:
		return keeperexec.AttachProxy(ctx, ch, connID)
	}
	if _, err := io.WriteString(c, connID+"\n"); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c.(*net.UnixConn), nil
}

// dialIn dials address in the sandbox's network namespace, as root; not
// as root it returns the sandbox's channel instead, for a connection
// stream.
func (p *Provider) dialIn(ctx context.Context, id, network, address string) (net.Conn, *channel.Conn, error) {
	if p.isolation() == "" {
		return nil, nil, provider.ErrNoDial
	}
	m, err := p.lookup(id)
	if err != nil {
		return nil, nil, err
	}
	si, ch, err := p.channelFor(ctx, id, m)
	if err != nil {
		return nil, nil, p.goneOr(id, initError(err))
	}
	if !netnsDial() {
		return nil, ch, nil
	}
	si.mu.Lock()
	ns := si.ns
	si.mu.Unlock()
	if ns == nil {
		return nil, ch, nil
	}
	fd, err := ns.dup()
	if err != nil {
		return nil, nil, p.goneOr(id, err)
	}
	defer unix.Close(fd)
	c, err := dialInNamespace(ctx, fd, network, address)
	return c, nil, err
}

// netnsDial says the resident may enter a sandbox's network namespace
// itself (root: CAP_SYS_ADMIN over it). A test turns it off to take the
// path of a resident without root, the keeper's connection streams.
var netnsDial = func() bool { return unix.Geteuid() == 0 }

// dup is a new descriptor of the namespace's pidfd, for setns.
func (ns *pidNamespace) dup() (int, error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.pidfd < 0 {
		return -1, errNamespaceGone
	}
	return netns.Dup(ns.pidfd)
}

// dialInNamespace dials address in the network namespace of the process
// pidfd holds (netns.Dial); one that cannot be entered is
// provider.ErrNoDial, for the caller's other path.
func dialInNamespace(ctx context.Context, pidfd int, network, address string) (net.Conn, error) {
	c, err := netns.Dial(ctx, pidfd, network, address)
	if errors.Is(err, netns.ErrCannotEnter) {
		return nil, fmt.Errorf("%w (%v)", provider.ErrNoDial, err)
	}
	return c, err
}
