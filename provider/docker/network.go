package docker

import (
	"context"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
)

// checkNetwork refuses a spec.network the engine does not have before
// anything is made, from the engine's typed not-found. Engines differ on
// when they notice by themselves: at create, at start (a not-found that
// does not say what is missing), or never (an engine run with --bridge=none
// takes "bridge" and starts the sandbox with no network at all).
func (p *Provider) checkNetwork(ctx context.Context, name string) error {
	mode, _ := networkMode(name) // validated
	if mode.IsNone() {
		return nil
	}
	lookup := string(mode)
	if mode.IsDefault() {
		lookup = network.NetworkBridge
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	_, err := p.cli.NetworkInspect(cctx, lookup, client.NetworkInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return kindErr(protocol.KindInvalidRequest, err, "spec.network %q: the docker engine has no such network", name)
	}
	return classify(cctx, "network inspect", err)
}
