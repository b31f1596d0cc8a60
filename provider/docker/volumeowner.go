package docker

import (
	"context"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/volume"
	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// The store is Docker named volumes. A volume that spec.volumes names is
// created when missing, labelled as a store volume of the creating install;
// from then on only that install sees it (provider.AccessTo), on every store
// call and in spec.volumes. A volume the resident did not make (a database's
// data, say) is out of reach unless the operator grants it by name
// (--allow-volume), read-only by default. Anything else answers exactly as a
// missing volume.

// volumeAccess is what owner may do with an existing volume. Our own
// volumes of other roles (the keeper's, sandboxes' scratch) are never store
// volumes, whatever a grant says.
func (p *Provider) volumeAccess(owner provider.Owner, name string, labels map[string]string) provider.VolumeAccess {
	if labels[LabelManaged] == "true" && labels[LabelRole] != RoleStore {
		return provider.VolumeHidden
	}
	return provider.AccessTo(owner, name, labels, p.grants)
}

// checkStoreVolume answers VolumeNotFound unless owner may browse volume.
func (p *Provider) checkStoreVolume(ctx context.Context, owner provider.Owner, name string) error {
	if !volumeName.MatchString(name) {
		return protocol.Errorf(protocol.KindInvalidRequest, "volume name %q is not valid", name)
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	v, err := p.cli.VolumeInspect(cctx, name, client.VolumeInspectOptions{})
	switch {
	case cerrdefs.IsNotFound(err):
		return provider.VolumeNotFound(name)
	case err != nil:
		return classify(cctx, "volume inspect", err)
	case p.volumeAccess(owner, name, v.Volume.Labels) == provider.VolumeHidden:
		return provider.VolumeNotFound(name)
	}
	return nil
}

// ensureStoreVolume makes sure owner may mount volume name, creating it for
// owner when missing, and says how.
func (p *Provider) ensureStoreVolume(ctx context.Context, name string, owner provider.Owner) (provider.VolumeAccess, error) {
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	inspected, err := p.cli.VolumeInspect(cctx, name, client.VolumeInspectOptions{})
	v := inspected.Volume
	switch {
	case cerrdefs.IsNotFound(err):
		labels := baseLabels(RoleStore)
		labels[owner.Key] = owner.InstallID
		// The engine answers a create of an existing name with that
		// volume: a racing install's, judged below by its labels.
		created, err := p.cli.VolumeCreate(cctx, client.VolumeCreateOptions{Name: name, Labels: labels})
		if err != nil {
			return provider.VolumeHidden, classify(cctx, "volume create", err)
		}
		v = created.Volume
		p.log.Info("store volume created", zap.String("volume", name), zap.String("owner", owner.InstallID))
	case err != nil:
		return provider.VolumeHidden, classify(cctx, "volume inspect", err)
	}
	access := p.volumeAccess(owner, name, v.Labels)
	if access == provider.VolumeHidden {
		return access, provider.VolumeNotFound(name)
	}
	return access, nil
}

// ListVolumes lists owner's store volumes (an exact label match by the
// engine, checked again here) and the granted volumes it may browse.
func (p *Provider) ListVolumes(ctx context.Context, owner provider.Owner) ([]protocol.Volume, error) {
	if err := validateOwner(owner); err != nil {
		return nil, err
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	filters := roleFilter(RoleStore).Add("label", owner.Key+"="+owner.InstallID)
	list, err := p.cli.VolumeList(cctx, client.VolumeListOptions{Filters: filters})
	if err != nil {
		return nil, classify(cctx, "volume list", err)
	}
	out := []protocol.Volume{}
	for _, v := range list.Items {
		if isManaged(v.Labels, RoleStore) && owner.Owns(v.Labels) {
			out = append(out, storeVolume(v))
		}
	}
	for _, g := range p.grants {
		inspected, err := p.cli.VolumeInspect(cctx, g.Name, client.VolumeInspectOptions{})
		if cerrdefs.IsNotFound(err) {
			continue
		} else if err != nil {
			return nil, classify(cctx, "volume inspect", err)
		}
		v := inspected.Volume
		if p.volumeAccess(owner, v.Name, v.Labels) != provider.VolumeHidden && !slices.ContainsFunc(out, func(o protocol.Volume) bool { return o.Name == v.Name }) {
			out = append(out, storeVolume(v))
		}
	}
	slices.SortFunc(out, func(a, b protocol.Volume) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func storeVolume(v volume.Volume) protocol.Volume {
	created, _ := time.Parse(time.RFC3339Nano, v.CreatedAt)
	return protocol.Volume{Name: v.Name, CreatedAt: created.UTC()}
}
