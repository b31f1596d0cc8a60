package keeperexec

import (
	"strconv"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// Relay is provider.Relayer for a provider whose sandboxes have the keeper
// at keeperproto.Path and run their execs in one network namespace (a
// server one exec starts is on the loopback the next one reaches): it
// embeds Relay.
type Relay struct{}

func (Relay) RelayCommand(port int) []string      { return RelayCommand(port) }
func (Relay) ProxyCommand(listen string) []string { return ProxyCommand(listen) }
func (Relay) AttachCommand(id string) []string    { return AttachCommand(id) }

// RelayCommand runs the keeper's relay to port on the sandbox's loopback.
func RelayCommand(port int) []string {
	return []string{keeperproto.Path, keeperproto.CmdRelay, "-port", strconv.Itoa(port)}
}

// ProxyCommand runs the keeper's egress proxy listening on listen.
func ProxyCommand(listen string) []string {
	return []string{keeperproto.Path, keeperproto.CmdProxy, "-listen", listen}
}

// AttachCommand runs the keeper's attach to the proxy's held connection id.
func AttachCommand(id string) []string {
	return []string{keeperproto.Path, keeperproto.CmdAttach, "-id", id}
}
