package docker

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/internal/keeper/keeperbin"
)

// The start sweep: what earlier residents on this engine left behind, of
// this version or any before it, and that no live resident can still be
// using. It touches only objects with our managed label and the role in
// question, so another program's containers, images and volumes are never
// looked at, and it decides "dead" from what the engine says, so it is
// right for residents of other installs, prefixes and hosts sharing the
// engine too:
//
//   - a store helper created and never started, once older than
//     timing.helperStart by the engine's clock: a live resident starts or
//     removes its helper within three control calls of creating it (create,
//     attach, start, each bounded by timing.api), so an older one's
//     resident is gone. Process identity (pid, boot id) would not do: the
//     resident may run on another host than the engine, in another pid
//     namespace, or be an older version that labelled nothing;
//   - a store helper that exited or is dead: AutoRemove failed (an engine
//     restart mid-run); nobody reads an exited helper;
//   - a keeper volume of another keeper digest, when the engine agrees to
//     remove it: it refuses while any container, running or not, mounts it;
//   - a keeper image of another digest, once its volume is gone: a live
//     older resident that finds its volume missing imports both again;
//   - a terminated sandbox whose background removal did not finish (its
//     resident was killed first): its gone name says so (gone.go).
//
// A running helper is never touched: it ends with its request (the lease,
// storehelper.go), and one of an older keeper when its output is written.
func (p *Provider) sweep(ctx context.Context) error {
	return errors.Join(p.sweepHelpers(ctx), p.sweepKeepers(ctx), p.sweepIdle(ctx), p.sweepGone(ctx), p.sweepImages(ctx))
}

// startSweep runs the sweep once per provider, in the background, so the
// first call is not held by it; Close cancels it and waits for it.
func (p *Provider) startSweep() {
	p.sweepOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		p.stopSweep = func() { cancel(); <-done }
		go func() {
			defer close(done)
			defer cancel()
			if err := p.sweep(ctx); err != nil && ctx.Err() == nil {
				p.log.Warn("start sweep incomplete", zap.Error(err))
			}
		}()
	})
}

func (p *Provider) sweepHelpers(ctx context.Context) error {
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	now, err := p.engineNow(cctx)
	if err != nil {
		return err
	}
	list, err := p.cli.ContainerList(cctx, client.ContainerListOptions{All: true, Filters: roleFilter(RoleStoreHelper)})
	if err != nil {
		return classify(cctx, "sweep: container list", err)
	}
	for _, c := range list.Items {
		if !isManaged(c.Labels, RoleStoreHelper) || !deadHelper(c.State, now.Sub(time.Unix(c.Created, 0)), p.timing.helperStart) {
			continue
		}
		p.removeHelper(c.ID)
		p.log.Info("orphaned store helper removed", zap.String("container", shortID(c.ID)), zap.String("state", string(c.State)))
	}
	return nil
}

// deadHelper says a helper in state, this old, has no live resident.
func deadHelper(state container.ContainerState, age, startBound time.Duration) bool {
	switch state {
	case container.StateExited, container.StateDead:
		return true
	case container.StateCreated:
		return age > startBound
	}
	return false
}

// engineNow is the engine's clock: helper ages are measured against the
// clock that stamped them, whatever the resident's host says.
func (p *Provider) engineNow(ctx context.Context) (time.Time, error) {
	info, err := p.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return time.Time{}, classify(ctx, "sweep: engine info", err)
	}
	now, err := time.Parse(time.RFC3339Nano, info.Info.SystemTime)
	if err != nil {
		return time.Time{}, errors.New("sweep: engine clock unreadable: " + info.Info.SystemTime)
	}
	return now, nil
}

func (p *Provider) sweepKeepers(ctx context.Context) error {
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	ver, err := p.cli.ServerVersion(cctx, client.ServerVersionOptions{})
	if err != nil {
		return classify(cctx, "sweep: docker version", err)
	}
	digest, err := keeperbin.DigestFor(ver.Arch)
	if err != nil {
		return nil // no keeper of ours runs on this engine: nothing is stale
	}
	current := refsFor(digest)
	vols, err := p.cli.VolumeList(cctx, client.VolumeListOptions{Filters: roleFilter(RoleKeeper)})
	if err != nil {
		return classify(cctx, "sweep: volume list", err)
	}
	kept := map[string]bool{current.volume: true}
	for _, v := range vols.Items {
		if !isManaged(v.Labels, RoleKeeper) || v.Name == current.volume {
			continue
		}
		if _, err := p.cli.VolumeRemove(cctx, v.Name, client.VolumeRemoveOptions{}); err != nil {
			kept[v.Name] = true // in use by a sandbox of an older keeper
			continue
		}
		p.log.Info("stale keeper volume removed", zap.String("volume", v.Name))
	}
	imgs, err := p.cli.ImageList(cctx, client.ImageListOptions{Filters: roleFilter(RoleKeeper)})
	if err != nil {
		return classify(cctx, "sweep: image list", err)
	}
	for _, img := range imgs.Items {
		if !isManaged(img.Labels, RoleKeeper) {
			continue
		}
		for _, ref := range img.RepoTags {
			tag, ok := strings.CutPrefix(ref, keeperImage)
			if !ok || ref == current.image || kept[keeperVolume+tag] {
				continue
			}
			if _, err := p.cli.ImageRemove(cctx, ref, client.ImageRemoveOptions{PruneChildren: true}); err == nil {
				p.log.Info("stale keeper image removed", zap.String("image", ref))
			}
		}
	}
	return nil
}
