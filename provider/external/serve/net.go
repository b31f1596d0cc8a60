package serve

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/wire"
)

// Two ports no Relayer puts into its command on its own: the templates
// are read from the commands for both and must agree.
const sentinelPort, otherSentinelPort = 47231, 47232

// NetCommands turns a Go provider's Relayer into net/commands' templates.
// The listen address and id are strings and go in as their placeholders;
// the port is an int, so it is read from the commands for two ports, and
// a command that does not differ only where the port stands is refused.
func NetCommands(r provider.Relayer) (wire.NetCommands, error) {
	one, two := r.RelayCommand(sentinelPort), r.RelayCommand(otherSentinelPort)
	if len(one) != len(two) {
		return wire.NetCommands{}, fmt.Errorf("the relay command's length depends on the port")
	}
	relay := make([]string, len(one))
	for i := range one {
		relay[i] = strings.ReplaceAll(one[i], strconv.Itoa(sentinelPort), wire.PlaceholderPort)
		if got := strings.ReplaceAll(relay[i], wire.PlaceholderPort, strconv.Itoa(otherSentinelPort)); got != two[i] {
			return wire.NetCommands{}, fmt.Errorf("the relay command's element %d is not a template of the port", i)
		}
	}
	n := wire.NetCommands{Relay: relay, Proxy: r.ProxyCommand(wire.PlaceholderListen), Attach: r.AttachCommand(wire.PlaceholderID)}
	return n, n.Check()
}

// netCommands answers net/commands, or says the provider carries no
// connections.
func (s *Server) netCommands() (any, error) {
	caps := s.prov.Info().Capabilities
	r, ok := s.prov.(provider.Relayer)
	if !ok || !(caps.PortForward || caps.Egress) {
		return nil, protocol.Errorf(protocol.KindInvalidRequest, "provider %s carries no connections (capabilities port_forward and egress are false)", s.prov.Info().Name)
	}
	n, err := NetCommands(r)
	if err != nil {
		return nil, protocol.Errorf(protocol.KindInternal, "provider %s: %v", s.prov.Info().Name, err)
	}
	return n, nil
}
