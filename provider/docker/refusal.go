package docker

import (
	"context"
	"errors"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
)

// execRefused explains an exec the engine or the runtime would not start
// for no reason of its own kind (the runtime's text instead of the keeper's
// status, the engine's 500 on exec start). Most often a terminate is racing
// the exec ("cannot exec in a stopped state", "OCI runtime exec failed"),
// and the engine may still call the sandbox running for a moment after the
// runtime saw it stop: the sandbox's state, once settled, says not_found
// or conflict. In a sandbox that keeps running, err (transient) stands.
func (p *Provider) execRefused(ctx context.Context, sandboxID string, err error) error {
	if protocol.KindOf(err) != protocol.KindTransient || ctx.Err() != nil || errors.Is(err, errEngineTimeout) {
		return err
	}
	if why := p.notRunning(ctx, sandboxID); why != nil {
		return why
	}
	if !p.stopsSoon(ctx, sandboxID) {
		return err
	}
	if why := p.notRunning(ctx, sandboxID); why != nil {
		return why
	}
	return err
}

// stopsSoon reports whether the sandbox stops (or goes) within
// timing.refusalSettle.
func (p *Provider) stopsSoon(ctx context.Context, sandboxID string) bool {
	wctx, cancel := context.WithTimeout(ctx, p.timing.refusalSettle)
	defer cancel()
	wait := p.cli.ContainerWait(wctx, sandboxID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-wait.Result:
		return true
	case err := <-wait.Error:
		return cerrdefs.IsNotFound(err)
	}
}

// notRunning is not_found for a sandbox that is gone and conflict for one
// that is stopped, stopping or paused; nil for one that runs (or whose
// state the engine cannot tell now: the caller's own error then stands).
func (p *Provider) notRunning(ctx context.Context, sandboxID string) error {
	c, err := p.inspectSandbox(ctx, sandboxID)
	switch {
	case protocol.KindOf(err) == protocol.KindNotFound:
		return err
	case err != nil:
		return nil
	case c.State != nil && c.State.Paused:
		return protocol.Errorf(protocol.KindConflict, "sandbox %s is paused", sandboxID[:12])
	case c.State == nil || !c.State.Running || c.State.Status == container.StateRemoving:
		return protocol.Errorf(protocol.KindConflict, "sandbox %s is not running", sandboxID[:12])
	}
	return nil
}
