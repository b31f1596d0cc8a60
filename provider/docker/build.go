package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"slices"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Image builds (provider.ImageBuilder) go through the Engine API's build
// endpoint with the classic builder, which needs no session and no
// registry: a FROM of a local image builds offline. RUN steps have no
// network. The result is labelled as ours (RoleBuild) with the owner and a
// digest of the context and Dockerfile path (LabelBuildContext), and tagged
// buildRef(owner, tag), so it is owner-scoped as snapshots are.
const (
	RoleBuild         = "build"
	LabelBuildContext = labelPrefix + "build-context"

	// MaxBuildContextBytes bounds the context a host may stream; it is
	// spooled to a temporary file to be hashed before the build.
	MaxBuildContextBytes = 1 << 30
)

var _ provider.ImageBuilder = (*Provider)(nil)

func buildRef(owner provider.Owner, tag string) string {
	sum := sha256.Sum256([]byte(owner.Key + "=" + owner.InstallID))
	return "resident-build-" + hex.EncodeToString(sum[:8]) + ":" + tag
}

// BuildImage spools the context while hashing it, reuses owner's image of
// the same digest when there is one, and builds otherwise.
func (p *Provider) BuildImage(ctx context.Context, owner provider.Owner, req provider.BuildRequest) (protocol.ImageBuildResult, error) {
	if err := validateOwner(owner); err != nil {
		return protocol.ImageBuildResult{}, err
	}
	spool, digest, err := spoolContext(req.Context, req.Dockerfile)
	if err != nil {
		return protocol.ImageBuildResult{}, err
	}
	defer func() { _ = spool.Close(); _ = os.Remove(spool.Name()) }()
	ref := buildRef(owner, req.Tag)
	result := protocol.ImageBuildResult{Image: protocol.BuildPrefix + req.Tag}
	if id, err := p.cachedBuild(ctx, owner, digest); err != nil || id != "" {
		if err != nil {
			return protocol.ImageBuildResult{}, err
		}
		cctx, cancel := p.callCtx(ctx)
		defer cancel()
		if _, err := p.cli.ImageTag(cctx, client.ImageTagOptions{Source: id, Target: ref}); err != nil {
			return protocol.ImageBuildResult{}, classify(cctx, "image tag", err)
		}
		req.Progress("", "using the image built earlier from the same context ("+shortID(id)+")")
		result.ImageID, result.Cached = id, true
		return result, nil
	}
	labels := baseLabels(RoleBuild)
	labels[owner.Key] = owner.InstallID
	labels[LabelBuildContext] = digest
	resp, err := p.cli.ImageBuild(ctx, spool, client.ImageBuildOptions{
		Tags: []string{ref}, Dockerfile: req.Dockerfile, Labels: labels, Remove: true, ForceRemove: true,
		NetworkMode: "none", Version: build.BuilderV1,
	})
	if err != nil {
		return protocol.ImageBuildResult{}, classify(ctx, "image build", err)
	}
	defer resp.Body.Close()
	if err := followBuild(ctx, resp.Body, req.Progress); err != nil {
		return protocol.ImageBuildResult{}, err
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	img, err := p.cli.ImageInspect(cctx, ref)
	if err != nil {
		return protocol.ImageBuildResult{}, classify(cctx, "image inspect", err)
	}
	p.log.Info("image built", zap.String("tag", req.Tag), zap.String("image", shortID(img.ID)), zap.String("owner", owner.InstallID))
	result.ImageID = img.ID
	return result, nil
}

// spoolContext copies the context to a temporary file, hashing it with the
// Dockerfile path, and rewinds the file for the build.
func spoolContext(r io.Reader, dockerfile string) (*os.File, string, error) {
	f, err := os.CreateTemp("", "resident-build-*.tar")
	if err != nil {
		return nil, "", protocol.Errorf(protocol.KindInternal, "build context spool: %v", err)
	}
	fail := func(err error) (*os.File, string, error) {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, "", err
	}
	h := sha256.New()
	h.Write([]byte(dockerfile + "\x00"))
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, MaxBuildContextBytes+1))
	switch {
	case err != nil:
		return fail(protocol.Errorf(protocol.KindCancelled, "build context stream ended: %v", err))
	case n > MaxBuildContextBytes:
		return fail(protocol.Errorf(protocol.KindQuota, "build context is over %d bytes", MaxBuildContextBytes))
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fail(protocol.Errorf(protocol.KindInternal, "build context spool: %v", err))
	}
	return f, hex.EncodeToString(h.Sum(nil)), nil
}

// cachedBuild finds owner's image built from digest ("" when none).
func (p *Provider) cachedBuild(ctx context.Context, owner provider.Owner, digest string) (string, error) {
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	list, err := p.cli.ImageList(cctx, client.ImageListOptions{Filters: roleFilter(RoleBuild).Add("label", owner.Key+"="+owner.InstallID, LabelBuildContext+"="+digest)})
	if err != nil {
		return "", classify(cctx, "image list", err)
	}
	for _, img := range list.Items {
		if isManaged(img.Labels, RoleBuild) && owner.Owns(img.Labels) && img.Labels[LabelBuildContext] == digest {
			return img.ID, nil
		}
	}
	return "", nil
}

// isOwnedBuild reports whether owner's image/build made the image ref.
func isOwnedBuild(labels map[string]string, owner provider.Owner, tags []string, ref string) bool {
	return isManaged(labels, RoleBuild) && owner.Owns(labels) && (tags == nil || slices.Contains(tags, ref))
}
