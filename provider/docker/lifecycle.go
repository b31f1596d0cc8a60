package docker

import (
	"context"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// ListOwned lists the owner's sandboxes by an exact label match done by
// the engine, and checks each label again here.
func (p *Provider) ListOwned(ctx context.Context, owner provider.Owner) ([]protocol.Sandbox, error) {
	if err := validateOwner(owner); err != nil {
		return nil, err
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	var items []container.Summary
	filter, _ := json.Marshal(ownedFilter(owner)) // as the SDK sends it
	if _, handled := p.quickGet(cctx, "/containers/json?all=1&filters="+url.QueryEscape(string(filter)), &items); !handled {
		list, err := p.cli.ContainerList(cctx, client.ContainerListOptions{All: true, Filters: ownedFilter(owner)})
		if err != nil {
			return nil, classify(cctx, "container list", err)
		}
		items = list.Items
	}
	out := []protocol.Sandbox{}
	for _, c := range items {
		if !isManaged(c.Labels, RoleSandbox) || !owner.Owns(c.Labels) || isIdle(c) || isGone(c) {
			continue
		}
		created := time.Unix(c.Created, 0).UTC()
		out = append(out, protocol.Sandbox{SandboxID: c.ID, Tags: hostTags(c.Labels), CreatedAt: created, State: p.stateOf(c, created), Image: c.Image})
	}
	slices.SortFunc(out, func(a, b protocol.Sandbox) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// stateOf: a stopped sandbox whose lifetime has passed is expired (the
// keeper ended it); any other stopped one is stopped.
func (p *Provider) stateOf(c container.Summary, created time.Time) string {
	switch c.State {
	case container.StateRunning, container.StatePaused, container.StateRestarting:
		return protocol.StateRunning
	case container.StateCreated, container.StateExited, container.StateDead, container.StateRemoving:
		if p.expired(c.Labels, created) {
			return protocol.StateExpired
		}
		return protocol.StateStopped
	}
	return protocol.StateUnknown
}

// checkRunning refuses a sandbox that is not running: an expired one (its
// keeper ended it at lifetime_s) or one stopped otherwise. Both are
// conflict, for exec and write_file alike.
func (p *Provider) checkRunning(id string, c container.InspectResponse) error {
	switch {
	case c.State != nil && c.State.Paused:
		return protocol.Errorf(protocol.KindConflict, "sandbox %s is paused", id[:12])
	case c.State != nil && c.State.Running:
		return nil
	case p.expired(c.Config.Labels, parseCreated(c.Created)):
		return protocol.Errorf(protocol.KindConflict, "sandbox %s expired (its lifetime_s ended); terminate it", id[:12])
	}
	return protocol.Errorf(protocol.KindConflict, "sandbox %s is not running", id[:12])
}

// expired says a sandbox's lifetime_s (a label) has passed since created.
func (p *Provider) expired(labels map[string]string, created time.Time) bool {
	secs, err := strconv.ParseInt(labels[LabelLifetime], 10, 64)
	return err == nil && secs > 0 && !p.now().Before(created.Add(time.Duration(secs)*time.Second))
}

// parseCreated reads an inspect's created time; the zero time (so a
// lifetime counts as passed) if the engine sent something else.
func parseCreated(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// inspectSandbox returns a sandbox's container, or not_found for anything
// that is not a full id of a container carrying our sandbox labels.
func (p *Provider) inspectSandbox(ctx context.Context, id string) (container.InspectResponse, error) {
	if !validID(id) {
		return container.InspectResponse{}, notFound(id)
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	var c container.InspectResponse
	found, handled := p.quickGet(cctx, "/containers/"+id+"/json", &c)
	if !handled {
		res, err := p.cli.ContainerInspect(cctx, id, client.ContainerInspectOptions{})
		if err != nil && !cerrdefs.IsNotFound(err) {
			return container.InspectResponse{}, classify(cctx, "container inspect", err)
		}
		found, c = err == nil, res.Container
	}
	if !found {
		p.known.forget(id)
		return container.InspectResponse{}, notFound(id)
	}
	if c.ID != id || c.Config == nil || !isManaged(c.Config.Labels, RoleSandbox) || isGoneName(c.Name) {
		return container.InspectResponse{}, notFound(id)
	}
	p.known.add(id, maps.Clone(c.Config.Labels))
	p.known.addConfig(id, sandboxConfig{env: slices.Clone(c.Config.Env), dir: workdirOf(c)})
	return c, nil
}

// KnownOwner answers as ReadOwner would, from memory and without asking the
// engine, for a sandbox this provider has already created or inspected: a
// container's labels never change. Whether it still exists is not answered.
func (p *Provider) KnownOwner(sandboxID, ownerKey string) (string, bool) {
	return p.known.owner(sandboxID, ownerKey)
}

// ReadOwner returns who owns one of our sandboxes under ownerKey, judged on
// every label the engine holds, the image's included (provider.OwnerOf).
func (p *Provider) ReadOwner(ctx context.Context, sandboxID, ownerKey string) (string, error) {
	c, err := p.inspectSandbox(ctx, sandboxID)
	if err != nil {
		return "", err
	}
	return provider.OwnerOf(c.Config.Labels, ownerKey), nil
}

// Terminate stops the sandbox gracefully (SIGTERM, then SIGKILL after
// timing.stopGrace; a sandbox's stop signal is SIGKILL) and removes it with
// its scratch volumes. existed is true only for the call that ended it: a
// missing container, or one that another call is already removing, is
// success with existed=false. A container without our sandbox labels is
// never touched.
//
// It answers once the sandbox is killed and gone to the host (gone.go):
// without store volumes the engine's removal finishes in the background;
// with them terminate waits for it, so the volumes are free when it
// answers.
//
// The whole call has one bound (timing.api; the stop's grace is within it).
// The removal goes on within that bound if the caller gives up: a cancelled
// terminate still terminates.
func (p *Provider) Terminate(ctx context.Context, sandboxID string) (bool, error) {
	deadline := time.Now().Add(p.timing.api)
	ctx, cancel := context.WithDeadlineCause(ctx, deadline, errEngineTimeout)
	defer cancel()
	c, err := p.inspectSandbox(ctx, sandboxID)
	if protocol.KindOf(err) == protocol.KindNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if c.State != nil && c.State.Status == container.StateRemoving {
		p.awaitRemoval(ctx, sandboxID)
		return false, nil
	}
	if !hasStoreVolumes(c) {
		if existed, done := p.terminateBehind(ctx, sandboxID, c); done {
			return existed, nil
		}
	} else {
		_ = p.stop(ctx, sandboxID, c)
		p.chans.drop(sandboxID)
	}
	rctx, rcancel := context.WithDeadlineCause(context.WithoutCancel(ctx), deadline, errEngineTimeout)
	defer rcancel()
	existed, err := p.removeWithin(rctx, sandboxID)
	if err == nil && existed {
		p.log.Info("sandbox terminated", zap.String("sandbox", sandboxID[:12]))
	}
	return existed, err
}

// stop stops a running sandbox within its grace. It reports false when
// the engine failed to (logged): the forced removal that follows kills it
// anyway, and is then waited for.
func (p *Provider) stop(ctx context.Context, id string, c container.InspectResponse) bool {
	if c.State == nil || !c.State.Running {
		return true
	}
	grace := int(p.timing.stopGrace.Round(time.Second) / time.Second)
	_, err := p.cli.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &grace})
	if err != nil && !cerrdefs.IsNotFound(err) && !isRemovalInProgress(err) && !cerrdefs.IsConflict(err) {
		p.log.Warn("sandbox stop failed; removing by force", zap.String("sandbox", id[:12]), zap.Error(err))
		return false
	}
	return true
}

// removeWithin force-removes a container and its anonymous volumes within
// ctx's bound.
func (p *Provider) removeWithin(ctx context.Context, id string) (bool, error) {
	ctx, cancel := p.callCtx(ctx)
	defer cancel()
	_, err := p.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err == nil || cerrdefs.IsNotFound(err) {
		p.known.forget(id)
	}
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	case isRemovalInProgress(err):
		// Another caller is removing it; terminate still answers only once
		// the sandbox is gone and its volumes are free.
		p.awaitRemoval(ctx, id)
		return false, nil
	case strings.Contains(err.Error(), "is already in progress"):
		return false, nil
	}
	return false, classify(ctx, "container remove", err)
}
