package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/internal/keeper/keeperbin"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
)

// helperRefs name the two engine objects the keeper lives in, both named
// after its digest so that a new keeper never meets an old one:
//   - image "resident-keeper:<digest>": only the keeper, for store helper
//     containers (and to create the container that fills the volume);
//   - volume "resident-keeper-<digest>": mounted read-only at
//     keeperproto.Dir in every sandbox, whatever its image.
//
// A volume, not a copy into each container: a read-only root filesystem
// refuses the archive API, and the volume costs one copy per engine.
type helperRefs struct {
	image, volume string
}

// The keeper's engine names, before the digest's first 16 hex digits.
const (
	keeperImage  = "resident-keeper:"
	keeperVolume = "resident-keeper-"
)

func refsFor(digest string) helperRefs {
	tag := digest[:16]
	return helperRefs{image: keeperImage + tag, volume: keeperVolume + tag}
}

// ensureHelpers makes the keeper image and volume exist on this engine. It
// is cheap after the first call (two inspects, to notice a pruned volume or
// image).
func (p *Provider) ensureHelpers(ctx context.Context) (helperRefs, error) {
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	ver, err := p.cli.ServerVersion(cctx, client.ServerVersionOptions{})
	if err != nil {
		return helperRefs{}, classify(cctx, "docker version", err)
	}
	digest, err := keeperbin.DigestFor(ver.Arch)
	if err != nil {
		return helperRefs{}, kindErr(protocol.KindInvalidRequest, err, "docker engine")
	}
	p.helperMu.Lock()
	defer p.helperMu.Unlock()
	refs, ok := p.helpers[ver.Arch]
	if ok && p.helpersExist(cctx, refs) {
		return refs, nil
	}
	// The bytes are needed only here, to check or fill the image and the
	// volume: unpacked for this call and let go after it.
	bin, err := keeperbin.Load(ver.Arch)
	if err != nil {
		return helperRefs{}, kindErr(protocol.KindInternal, err, "embedded keeper")
	}
	refs = refsFor(digest)
	if err := p.ensureHelperImage(cctx, refs.image, bin.Data); err != nil {
		return helperRefs{}, err
	}
	if err := p.ensureKeeperVolume(cctx, refs, bin.Data); err != nil {
		return helperRefs{}, err
	}
	p.helpers[ver.Arch] = refs
	return refs, nil
}

// helpersExist says the image and the volume are both still there: a
// prune, or the start sweep of a resident of another version (sweep.go),
// may have removed either.
func (p *Provider) helpersExist(ctx context.Context, refs helperRefs) bool {
	if _, err := p.cli.VolumeInspect(ctx, refs.volume, client.VolumeInspectOptions{}); err != nil {
		return false
	}
	_, err := p.cli.ImageInspect(ctx, refs.image)
	return err == nil
}

// ensureHelperImage imports a one-file image from a tarball made here: no
// registry, no build context, no Dockerfile.
func (p *Provider) ensureHelperImage(ctx context.Context, ref string, keeper []byte) error {
	if _, err := p.cli.ImageInspect(ctx, ref); err == nil {
		return nil
	} else if !cerrdefs.IsNotFound(err) {
		return classify(ctx, "keeper image", err)
	}
	layer := tarOf(tarDir(strings.TrimPrefix(keeperproto.Dir, "/"), 0o755), tarDir(strings.TrimPrefix(keeperproto.StoreRoot, "/"), 0o755),
		tarFile(strings.TrimPrefix(keeperproto.Path, "/"), keeper, 0o755))
	changes := []string{"LABEL " + LabelManaged + "=true " + LabelRole + "=" + RoleKeeper, "ENTRYPOINT [\"" + keeperproto.Path + "\"]"}
	resp, err := p.cli.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(layer), SourceName: "-"}, ref, client.ImageImportOptions{Changes: changes})
	if err != nil {
		return classify(ctx, "keeper image import", err)
	}
	defer resp.Close()
	if err := jsonStreamError(resp); err != nil {
		return classify(ctx, "keeper image import", err)
	}
	p.log.Info("keeper image imported")
	return nil
}

// ensureKeeperVolume creates the keeper volume and copies the keeper in,
// through a container that is created but never started.
func (p *Provider) ensureKeeperVolume(ctx context.Context, refs helperRefs, keeper []byte) error {
	if _, err := p.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: refs.volume, Labels: baseLabels(RoleKeeper)}); err != nil {
		return classify(ctx, "keeper volume", err)
	}
	const at = "/k"
	created, err := p.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: refs.image, Labels: baseLabels(RoleStoreHelper), NetworkDisabled: true},
		HostConfig: &container.HostConfig{NetworkMode: "none", Mounts: []mount.Mount{{
			Type: mount.TypeVolume, Source: refs.volume, Target: at, VolumeOptions: &mount.VolumeOptions{NoCopy: true},
		}}},
	})
	if err != nil {
		return classify(ctx, "keeper volume", err)
	}
	defer p.removeHelper(created.ID)
	if st, err := p.cli.ContainerStatPath(ctx, created.ID, client.ContainerStatPathOptions{Path: at + "/keeper"}); err == nil && st.Stat.Size == int64(len(keeper)) {
		return nil // another resident filled it (same digest, same bytes)
	}
	_, err = p.cli.CopyToContainer(ctx, created.ID, client.CopyToContainerOptions{DestinationPath: at, Content: bytes.NewReader(tarOf(tarFile("keeper", keeper, 0o755)))})
	if err != nil {
		return classify(ctx, "keeper volume fill", err)
	}
	p.log.Info("keeper volume filled", zap.String("volume", refs.volume))
	return nil
}

// removeHelper removes a helper container on a fresh context: it runs on
// every exit path, including after the caller's context ended. It returns
// once the container is gone (or the bound passed), so the volume it
// mounted is free for whoever comes next.
func (p *Provider) removeHelper(id string) {
	// A remove that fails otherwise (the engine slow past one call's bound
	// under load) is tried twice more: a helper left behind holds its
	// volume until the next resident's start sweep.
	var err error
	for attempt := range 3 {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), p.timing.api)
		_, err = p.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if isRemovalInProgress(err) {
			p.awaitRemoval(ctx, id)
			err = nil
		}
		cancel()
		if err == nil || cerrdefs.IsNotFound(err) {
			return
		}
	}
	p.log.Warn("store helper not removed", zap.String("container", id), zap.Error(err))
}

// awaitRemoval waits until a container that someone else is removing is
// gone. A helper that exits on its own is auto-removed by the engine, and
// a forced remove that meets that removal returns at once with "already in
// progress" while the container still holds its mounts.
func (p *Provider) awaitRemoval(ctx context.Context, id string) {
	w := p.cli.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionRemoved})
	select { // the client's goroutine sends exactly one of the two
	case <-w.Result:
	case <-w.Error:
	}
}

type tarEntry func(*tar.Writer) error

func tarDir(name string, mode int64) tarEntry {
	return func(tw *tar.Writer) error {
		return tw.WriteHeader(&tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: mode})
	}
}

func tarFile(name string, data []byte, mode int64) tarEntry {
	return func(tw *tar.Writer) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(data))}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
}

// tarOf builds a tar in memory; writing to a bytes.Buffer cannot fail.
func tarOf(entries ...tarEntry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		_ = e(tw)
	}
	_ = tw.Close()
	return buf.Bytes()
}

// jsonStreamError drains a JSON message stream (import, load, push) and
// returns the first error message in it.
func jsonStreamError(r io.Reader) error {
	for msg, err := range jsonMessages(r) {
		if err != nil {
			return err
		}
		if msg.Error != nil {
			return fmt.Errorf("%s", msg.Error.Message)
		}
	}
	return nil
}
