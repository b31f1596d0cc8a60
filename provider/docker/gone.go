package docker

import (
	"context"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
)

// A terminated sandbox is gone to the host once it is killed and renamed
// goneName(id): every lookup (inspectSandbox, so read_owner, exec, files,
// snapshot) answers not_found for it and ListOwned skips it, while the
// engine's removal of its container and scratch volumes, which grows with
// what the sandbox wrote, finishes in the background. The name is the mark
// that survives the resident: a start sweep of any resident removes a
// gone container one killed before its removal finished (sweepGone).
//
// A sandbox with store volumes is removed before terminate answers, as
// before: the host may remount or delete the volume next, and the engine
// refuses that while any container, running or not, holds it.
const goneNamePrefix = "resident-gone-"

func goneName(id string) string { return goneNamePrefix + id[:24] }

// isGoneName reports whether a container name (with or without the
// engine's leading slash) marks a terminated sandbox.
func isGoneName(name string) bool {
	return strings.HasPrefix(strings.TrimPrefix(name, "/"), goneNamePrefix)
}

func isGone(c container.Summary) bool { return len(c.Names) > 0 && isGoneName(c.Names[0]) }

// hasStoreVolumes reports whether a sandbox mounts a named volume other
// than the keeper's: a store volume (a read-only root's scratch volumes
// are anonymous and go with the container).
func hasStoreVolumes(c container.InspectResponse) bool {
	if c.HostConfig == nil {
		return true // cannot tell: the careful path
	}
	for _, m := range c.HostConfig.Mounts {
		if m.Type == mount.TypeVolume && m.Source != "" && m.Target != keeperproto.Dir {
			return true
		}
	}
	return false
}

// terminateBehind kills the sandbox and renames it gone, and leaves the
// removal to the background. existed is true for the call whose rename
// did it; done is false when the kill failed (the sandbox may still run)
// or the rename failed for another reason than a lost race: the caller
// then removes the sandbox itself before answering.
//
// The kill is the keeper's (shutdownByKeeper) where this provider holds
// the sandbox's channel: it answers once every process of the sandbox is
// dead, without the engine's stop, which waits until the engine has
// recorded the exit (its containerd task deleted, the streams closed) and
// under a loaded engine took most of a trial (docs/performance.md). The
// rename goes first there: the engine holds the container's lock while it
// records an exit, and a rename sent beside the keeper's exit waited for
// all of it. Without a held channel the engine stops it, the rename at
// the same time.
func (p *Provider) terminateBehind(ctx context.Context, id string, c container.InspectResponse) (existed, done bool) {
	var err error
	stopped := false
	if conn := p.chans.heldConn(id); conn != nil && conn.Supports(keeperproto.FeatureShutdown) && c.State != nil && c.State.Running && !c.State.Paused {
		_, err = p.cli.ContainerRename(ctx, id, client.ContainerRenameOptions{NewName: goneName(id)})
		if err == nil {
			stopped = p.shutdownByKeeper(ctx, id, conn) || p.stop(ctx, id, c)
		}
	} else {
		renamed := make(chan error, 1)
		go func() {
			_, err := p.cli.ContainerRename(ctx, id, client.ContainerRenameOptions{NewName: goneName(id)})
			renamed <- err
		}()
		stopped = p.stop(ctx, id, c)
		err = <-renamed
	}
	// After the kill: the channel's execs end as the sandbox's do
	// (SIGKILL), not as a broken channel's.
	p.chans.drop(id)
	if err == nil && !stopped {
		p.known.forget(id)
		return false, false
	}
	if err == nil {
		p.known.forget(id)
		p.removeGone(id)
		p.log.Info("sandbox terminated", zap.String("sandbox", id[:12]))
		return true, true
	}
	// Another terminate renamed it first, or removed it since.
	if _, ierr := p.inspectSandbox(ctx, id); protocol.KindOf(ierr) == protocol.KindNotFound {
		return false, true
	}
	p.log.Info("sandbox not marked gone; removing it before terminate answers", zap.String("sandbox", id[:12]), zap.Error(err))
	return false, false
}

// shutdownByKeeper has the sandbox's keeper end it (FeatureShutdown; never
// a paused one's, which cannot answer): true
// once the keeper answered that every other process of the sandbox is
// dead; it exits next, and the engine records the container's stop behind
// the answer (the removal behind waits for that). False, logged, where the
// keeper refused or the channel failed: the engine stops it then.
func (p *Provider) shutdownByKeeper(ctx context.Context, id string, conn *channel.Conn) bool {
	// Bounded apart from the call: a keeper that does not answer (frozen
	// under it) leaves time for the engine's stop.
	ctx, cancel := context.WithTimeout(ctx, keeperproto.ShutdownWait+2*time.Second)
	defer cancel()
	err := conn.Shutdown(ctx)
	if err != nil {
		p.log.Info("the sandbox's keeper did not end it; stopping it through the engine", zap.String("sandbox", id[:12]), zap.Error(err))
		return false
	}
	p.log.Debug("sandbox ended by its keeper", zap.String("sandbox", id[:12]))
	return true
}

// removeGone removes a gone sandbox in the background (removeBehind's
// retries); what it cannot remove before Close is left to a start sweep.
func (p *Provider) removeGone(id string) {
	p.removeBehind(id, p.log.With(zap.String("sandbox", id[:12])), "terminated sandbox", "a later resident's start sweep removes it")
}

// sweepGone is the start sweep's part for terminated sandboxes: a gone
// container is one a resident terminated and answered for, so nobody uses
// it; any resident removes it, of any install.
func (p *Provider) sweepGone(ctx context.Context) error {
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	list, err := p.cli.ContainerList(cctx, client.ContainerListOptions{All: true, Filters: roleFilter(RoleSandbox).Add("name", goneNamePrefix)})
	if err != nil {
		return classify(cctx, "container list", err)
	}
	for _, c := range list.Items {
		if !isManaged(c.Labels, RoleSandbox) || !isGone(c) {
			continue
		}
		if _, err := p.removeWithin(ctx, c.ID); err != nil {
			p.log.Info("terminated sandbox not removed by the sweep", zap.String("sandbox", shortID(c.ID)), zap.Error(err))
		}
	}
	return nil
}
