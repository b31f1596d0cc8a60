package docker

import (
	"errors"
	"sync"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/provider"
)

// OptForward is --provider-opt forward=...: how a sandbox's connections
// (port forwards, egress) travel. "auto" (the default) dials inside the
// container's network namespace from the resident itself where it can:
// the engine on this machine (DOCKER_HOST unix://), the resident root and
// in the engine's pid namespace. There a forwarded connection is a plain
// socket, no hop through the engine's attach stream. Anywhere else, and
// with "channel", connections are streams of the keeper's channel, or the
// relay's exec on the exec path.
var OptForward = provider.Option[string]{Name: "forward", Default: ForwardAuto,
	Doc: `how forwarded and egress connections reach a sandbox: "auto" (dial inside the container's network namespace when the engine is on this machine and the resident is root; else the keeper channel) or "channel" (always the keeper channel's connection streams)`}

// The values of OptForward.
const (
	ForwardAuto    = "auto"
	ForwardChannel = "channel"
)

// errNoDirect says a connection cannot be dialled inside the container's
// namespace from here; the caller takes the channel's stream instead.
var errNoDirect = errors.New("docker: no direct dial into this sandbox")

// netPaths logs once per provider each path connections take, and why.
type netPaths struct {
	mu     sync.Mutex
	logged map[string]bool
}

func (n *netPaths) use(log *zap.Logger, path, why string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.logged[path] {
		return
	}
	if n.logged == nil {
		n.logged = map[string]bool{}
	}
	n.logged[path] = true
	log.Info("sandbox connections travel by "+path, zap.String("why", why))
}

// directDial is the provider's state of the direct path: whether it may be
// taken at all (decided once), and each sandbox's keeper held by a pidfd.
type directDial struct {
	mode string // OptForward

	once   sync.Once
	usable bool   // the engine is on this machine, the resident root
	why    string // why not, when not

	mu  sync.Mutex
	set map[string]*nsEntry // by sandbox id
	off bool                // setns refused once: the channel from now on
}
