package docker

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// CreateVolume makes an empty store volume labelled for owner. The engine
// answers a create of an existing name with that volume, so a name is
// checked first and the labels of what the create returns are checked
// after: one another install won a race for is exists. (Two sessions of
// one install racing for a name both succeed: it is theirs either way.)
func (p *Provider) CreateVolume(ctx context.Context, owner provider.Owner, name string) error {
	if !volumeName.MatchString(name) {
		return protocol.Errorf(protocol.KindInvalidRequest, "volume name %q is not valid", name)
	}
	exists := protocol.ReasonError(protocol.ReasonExists, protocol.FieldName, fmt.Sprintf("volume %q exists", name), nil)
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	_, err := p.cli.VolumeInspect(cctx, name, client.VolumeInspectOptions{})
	switch {
	case err == nil:
		return exists
	case !cerrdefs.IsNotFound(err):
		return classify(cctx, "volume inspect", err)
	}
	labels := baseLabels(RoleStore)
	labels[owner.Key] = owner.InstallID
	created, err := p.cli.VolumeCreate(cctx, client.VolumeCreateOptions{Name: name, Labels: labels})
	if err != nil {
		return classify(cctx, "volume create", err)
	}
	if !owner.Owns(created.Volume.Labels) {
		return exists // another install's create won the race
	}
	p.log.Info("store volume created", zap.String("volume", name), zap.String("owner", owner.InstallID))
	return nil
}

// DeleteVolume removes one of owner's store volumes. One that a running
// sandbox mounts is conflict; so is one a stopped sandbox still holds (the
// engine refuses to remove it): terminate that sandbox first.
func (p *Provider) DeleteVolume(ctx context.Context, owner provider.Owner, name string) error {
	if !volumeName.MatchString(name) {
		return provider.VolumeNotFound(name)
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	v, err := p.cli.VolumeInspect(cctx, name, client.VolumeInspectOptions{})
	switch {
	case cerrdefs.IsNotFound(err):
		return provider.VolumeNotFound(name)
	case err != nil:
		return classify(cctx, "volume inspect", err)
	case !owner.Owns(v.Volume.Labels) || v.Volume.Labels[LabelRole] != RoleStore:
		return provider.VolumeNotFound(name)
	}
	users, err := p.cli.ContainerList(cctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("volume", name)})
	if err != nil {
		return classify(cctx, "container list", err)
	}
	for _, c := range users.Items {
		if c.State == "running" {
			return protocol.Errorf(protocol.KindConflict, "volume %q is mounted by running sandbox %s; terminate it first", name, c.ID[:min(12, len(c.ID))])
		}
	}
	if _, err := p.cli.VolumeRemove(cctx, name, client.VolumeRemoveOptions{}); err != nil {
		if cerrdefs.IsNotFound(err) {
			return provider.VolumeNotFound(name)
		}
		if cerrdefs.IsConflict(err) {
			return protocol.Errorf(protocol.KindConflict, "volume %q is held by a sandbox; terminate it first", name)
		}
		return classify(cctx, "volume remove", err)
	}
	p.log.Info("store volume deleted", zap.String("volume", name), zap.String("owner", owner.InstallID))
	return nil
}
