//go:build !linux

package docker

import (
	"context"
	"net"

	"github.com/resident-dev/resident/internal/keeper/channel"
)

type nsEntry struct{}

// dialDirect: only Linux has network namespaces to enter.
func (p *Provider) dialDirect(context.Context, string, *channel.Conn, string, string) (net.Conn, string, error) {
	return nil, "not Linux", errNoDirect
}
