package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Snapshots are images the engine commits from a sandbox, labelled as ours
// (RoleSnapshot), with the owner label and the snapshot's name, and tagged
// snapshotRef(owner, name): the repository is a digest of the owner tag, so
// two installs' names never meet, and a snapshot is found by its tag and
// believed only when its labels agree. Volumes (the keeper's, store
// volumes, a read-only root's scratch) are not part of it, as a commit
// never includes them. The committed image keeps the sandbox's env and
// work directory as its defaults.
const (
	RoleSnapshot      = "snapshot"
	LabelSnapshotName = labelPrefix + "snapshot-name"
)

var _ provider.Snapshotter = (*Provider)(nil)

func snapshotRepo(owner provider.Owner) string {
	sum := sha256.Sum256([]byte(owner.Key + "=" + owner.InstallID))
	return "resident-snapshot-" + hex.EncodeToString(sum[:8])
}

func snapshotRef(owner provider.Owner, name string) string {
	return snapshotRepo(owner) + ":" + name
}

func snapshotMissing(name string) error {
	return protocol.Errorf(protocol.KindNotFound, "snapshot %q not found", name)
}

// isSnapshotOf reports whether image labels mark owner's snapshot name.
func isSnapshotOf(labels map[string]string, owner provider.Owner, name string) bool {
	return isManaged(labels, RoleSnapshot) && owner.Owns(labels) && labels[LabelSnapshotName] == name
}

// Snapshot commits the sandbox (paused while it is committed, so what is
// recorded is one moment of it).
func (p *Provider) Snapshot(ctx context.Context, sandboxID string, owner provider.Owner, name string) (protocol.Snapshot, error) {
	if err := validateOwner(owner); err != nil {
		return protocol.Snapshot{}, err
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	if err := p.checkOwnedSandbox(cctx, sandboxID, owner); err != nil {
		return protocol.Snapshot{}, err
	}
	switch _, err := p.findSnapshot(cctx, owner, name); {
	case err == nil:
		return protocol.Snapshot{}, protocol.Errorf(protocol.KindConflict, "snapshot %q exists; delete it first", name)
	case protocol.KindOf(err) != protocol.KindNotFound:
		return protocol.Snapshot{}, err
	}
	labels := baseLabels(RoleSnapshot)
	labels[owner.Key] = owner.InstallID
	labels[LabelSnapshotName] = name
	if _, err := p.cli.ContainerCommit(cctx, sandboxID, client.ContainerCommitOptions{
		Reference: snapshotRef(owner, name), Comment: "resident snapshot " + name, Config: &container.Config{Labels: labels},
	}); err != nil {
		return protocol.Snapshot{}, classify(cctx, "container commit", err)
	}
	p.log.Info("snapshot taken", zap.String("sandbox", shortID(sandboxID)), zap.String("snapshot", name), zap.String("owner", owner.InstallID))
	return p.snapshotInfo(cctx, owner, name)
}

// checkOwnedSandbox refuses, as missing, a sandbox owner does not own,
// from memory when the provider knows it (its owner never changes).
func (p *Provider) checkOwnedSandbox(ctx context.Context, sandboxID string, owner provider.Owner) error {
	if known, ok := p.known.owner(sandboxID, owner.Key); ok && known == owner.InstallID {
		return nil
	}
	c, err := p.inspectSandbox(ctx, sandboxID)
	if err != nil {
		return err
	}
	if !owner.Owns(c.Config.Labels) {
		return notFound(sandboxID)
	}
	return nil
}

// findSnapshot returns the image id of owner's snapshot name.
func (p *Provider) findSnapshot(ctx context.Context, owner provider.Owner, name string) (string, error) {
	res, err := p.cli.ImageInspect(ctx, snapshotRef(owner, name))
	switch {
	case cerrdefs.IsNotFound(err):
		return "", snapshotMissing(name)
	case err != nil:
		return "", classify(ctx, "image inspect", err)
	case res.Config == nil || !isSnapshotOf(res.Config.Labels, owner, name):
		return "", snapshotMissing(name)
	}
	return res.ID, nil
}

func (p *Provider) snapshotInfo(ctx context.Context, owner provider.Owner, name string) (protocol.Snapshot, error) {
	res, err := p.cli.ImageInspect(ctx, snapshotRef(owner, name))
	if err != nil {
		return protocol.Snapshot{}, classify(ctx, "image inspect", err)
	}
	created, _ := time.Parse(time.RFC3339Nano, res.Created)
	return protocol.Snapshot{Name: name, Image: protocol.SnapshotPrefix + name, CreatedAt: created.UTC(), SizeBytes: res.Size}, nil
}

// ListSnapshots lists owner's tagged snapshots, oldest first.
func (p *Provider) ListSnapshots(ctx context.Context, owner provider.Owner) ([]protocol.Snapshot, error) {
	if err := validateOwner(owner); err != nil {
		return nil, err
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	list, err := p.cli.ImageList(cctx, client.ImageListOptions{Filters: roleFilter(RoleSnapshot).Add("label", owner.Key+"="+owner.InstallID)})
	if err != nil {
		return nil, classify(cctx, "image list", err)
	}
	out := []protocol.Snapshot{}
	for _, img := range list.Items {
		name := img.Labels[LabelSnapshotName]
		if !isSnapshotOf(img.Labels, owner, name) || !slices.Contains(img.RepoTags, snapshotRef(owner, name)) {
			continue
		}
		out = append(out, protocol.Snapshot{Name: name, Image: protocol.SnapshotPrefix + name, CreatedAt: time.Unix(img.Created, 0).UTC(), SizeBytes: img.Size})
	}
	slices.SortFunc(out, func(a, b protocol.Snapshot) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// DeleteSnapshot removes the tag. Sandboxes made from the snapshot keep
// their image, which the engine removes with the last of them.
func (p *Provider) DeleteSnapshot(ctx context.Context, owner provider.Owner, name string) (bool, error) {
	if err := validateOwner(owner); err != nil {
		return false, err
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	switch _, err := p.findSnapshot(cctx, owner, name); {
	case protocol.KindOf(err) == protocol.KindNotFound:
		return false, nil
	case err != nil:
		return false, err
	}
	_, err := p.cli.ImageRemove(cctx, snapshotRef(owner, name), client.ImageRemoveOptions{Force: true, PruneChildren: true})
	switch {
	case cerrdefs.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, classify(cctx, "image remove", err)
	}
	return true, nil
}

// resolveOwnedImage turns spec.image "snapshot:NAME" into owner's snapshot's
// image id, and "build:TAG" into owner's built image's; any other image is
// left as it is.
func (p *Provider) resolveOwnedImage(ctx context.Context, image string, owner provider.Owner) (string, error) {
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	if tag, ok := strings.CutPrefix(image, protocol.BuildPrefix); ok {
		res, err := p.cli.ImageInspect(cctx, buildRef(owner, tag))
		switch {
		case cerrdefs.IsNotFound(err):
			return "", protocol.Errorf(protocol.KindNotFound, "built image %q not found", tag)
		case err != nil:
			return "", classify(cctx, "image inspect", err)
		case res.Config == nil || !isOwnedBuild(res.Config.Labels, owner, res.RepoTags, buildRef(owner, tag)):
			return "", protocol.Errorf(protocol.KindNotFound, "built image %q not found", tag)
		}
		return res.ID, nil
	}
	name, ok := strings.CutPrefix(image, protocol.SnapshotPrefix)
	if !ok {
		return image, nil
	}
	return p.findSnapshot(cctx, owner, name)
}

// checkOwnedImage refuses, as missing, a snapshot or built image of
// another install named by its raw reference: its files are that install's.
func checkOwnedImage(image string, labels map[string]string, owner provider.Owner) error {
	if (isManaged(labels, RoleSnapshot) || isManaged(labels, RoleBuild)) && !owner.Owns(labels) {
		return protocol.Errorf(protocol.KindNotFound, "image %q not found", image)
	}
	return nil
}

// sweepImages is the start sweep's part for snapshots and builds: an image
// of ours that lost its last tag (a snapshot deleted while a fork still ran
// from it, a build whose tag moved to a newer one) is removed, once no
// container uses it; the engine refuses while one does, and a later
// resident's sweep tries again.
func (p *Provider) sweepImages(ctx context.Context) error {
	return p.sweepImagesOlderThan(ctx, untaggedImageAge)
}

// untaggedImageAge is how long an untagged image of ours is left alone.
const untaggedImageAge = 10 * time.Minute

func (p *Provider) sweepImagesOlderThan(ctx context.Context, minAge time.Duration) error {
	for _, role := range []string{RoleSnapshot, RoleBuild} {
		cctx, cancel := p.callCtx(ctx)
		list, err := p.cli.ImageList(cctx, client.ImageListOptions{Filters: roleFilter(role).Add("dangling", "true")})
		cancel()
		if err != nil {
			return classify(ctx, "image list", err)
		}
		for _, img := range list.Items {
			// Older engines list an untagged image's tags as "<none>:<none>".
			// A young one may be a build's step between two others (the
			// classic builder's intermediate images carry our labels from
			// the step that adds them): leave it to a later sweep.
			if !isManaged(img.Labels, role) || slices.ContainsFunc(img.RepoTags, func(t string) bool { return t != "<none>:<none>" }) ||
				time.Since(time.Unix(img.Created, 0)) < minAge {
				continue
			}
			cctx, cancel := p.callCtx(ctx)
			_, err := p.cli.ImageRemove(cctx, img.ID, client.ImageRemoveOptions{PruneChildren: true})
			cancel()
			if err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
				p.log.Info("untagged image not removed", zap.String("image", shortID(img.ID)), zap.Error(err))
			}
		}
	}
	return nil
}
