package docker

import (
	"strconv"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/provider"
)

var _ provider.Relayer = (*Provider)(nil)

// RelayCommand runs the keeper's relay: every sandbox has the keeper at
// keeperproto.Path, whatever its image.
func (p *Provider) RelayCommand(port int) []string {
	return []string{keeperproto.Path, keeperproto.CmdRelay, "-port", strconv.Itoa(port)}
}

// ProxyCommand runs the keeper's egress proxy.
func (p *Provider) ProxyCommand(listen string) []string {
	return []string{keeperproto.Path, keeperproto.CmdProxy, "-listen", listen}
}

// AttachCommand runs the keeper's attach.
func (p *Provider) AttachCommand(id string) []string {
	return []string{keeperproto.Path, keeperproto.CmdAttach, "-id", id}
}
