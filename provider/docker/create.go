package docker

import (
	"cmp"
	"context"
	"path"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Create makes and starts a hardened container (see doc.go for every
// default). The container's command is the keeper's "alive", under Docker's
// init, so it needs nothing from the image: no shell, no sleep.
//
// The whole create has one bound (timing.api), as every call has, however
// many engine calls it makes: ctx is that bound from here on. A pull is
// bounded by its progress instead (it runs under parent), and what follows
// it gets a fresh bound. A container made but not started is removed within
// what is left of the bound, or else in the background (discard).
func (p *Provider) Create(ctx context.Context, spec protocol.Spec, owner provider.Owner, tags map[string]string) (string, error) {
	if err := validateSpec(spec); err != nil {
		return "", err
	}
	if err := provider.RefuseUnannounced(p.Info(), nil, &spec); err != nil {
		return "", err
	}
	labels, err := sandboxLabels(spec, owner, tags)
	if err != nil {
		return "", err
	}
	parent := ctx
	ctx, endBound := p.callCtx(parent)
	defer func() { endBound() }()
	if err := p.checkNetwork(ctx, spec.Network); err != nil {
		return "", err
	}
	img, err := p.ensureImage(ctx, parent, spec.Image, func() context.Context {
		endBound()
		ctx, endBound = p.callCtx(parent)
		return ctx
	})
	if err != nil {
		return "", err
	}
	var imageEnv []string
	var imageLabels map[string]string
	imageWorkdir := ""
	if img.Config != nil {
		imageEnv, imageLabels, imageWorkdir = img.Config.Env, img.Config.Labels, img.Config.WorkingDir
	}
	if err := checkImageLabels(spec.Image, imageLabels, owner); err != nil {
		return "", err
	}
	refs, err := p.ensureHelpers(ctx)
	if err != nil {
		return "", err
	}
	spec.Workdir = workdirFor(spec, imageWorkdir)
	base := cmp.Or(spec.Workdir, imageWorkdir, "/")
	if spec.Volumes, err = mountPaths(spec.Volumes, base); err != nil {
		return "", err
	}
	mounts, err := p.sandboxMounts(ctx, spec, owner, refs)
	if err != nil {
		return "", err
	}
	cfg := &container.Config{
		Image:      spec.Image,
		Entrypoint: []string{keeperproto.Path, keeperproto.CmdAlive, strconv.FormatInt(spec.LifetimeS, 10)},
		Cmd:        []string{},
		Env:        containerEnv(spec, imageEnv),
		WorkingDir: spec.Workdir,
		Labels:     labels,
		// The keeper's "alive" ignores the SIGTERM docker-init would forward
		// (see the keeper): the container's processes die with pid 1 either
		// way, so nothing is lost by not asking.
		StopSignal: "SIGKILL",
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	created, err := p.cli.ContainerCreate(cctx, client.ContainerCreateOptions{Config: cfg, HostConfig: hostConfig(spec, mounts)})
	if err != nil {
		err = classify(cctx, "container create", err)
		if protocol.KindOf(err) == protocol.KindNotFound {
			// The image was just inspected: what is missing is the network.
			err = kindErr(protocol.KindInvalidRequest, err, "spec.network %q", spec.Network)
		}
		return "", err
	}
	if _, err := p.cli.ContainerStart(cctx, created.ID, client.ContainerStartOptions{}); err != nil {
		err = classify(cctx, "container start", err)
		p.discard(cctx, created.ID, "its start failed")
		return "", err
	}
	p.known.add(created.ID, engineLabels(labels, imageLabels))
	p.log.Info("sandbox created", zap.String("sandbox", created.ID[:12]), zap.String("image", spec.Image), zap.String("owner", owner.InstallID))
	return created.ID, nil
}

// keeperCaps are the capabilities a keeper needs to protect itself and to
// mark and kill an exec's processes: switch to its own uid (SETUID,
// SETGID), empty its bounding set (SETPCAP), signal root processes (KILL).
var keeperCaps = []string{"CAP_KILL", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"}

// hostConfig is where the hardening lives.
func hostConfig(spec protocol.Spec, mounts []mount.Mount) *container.HostConfig {
	init := true
	pids := int64(DefaultPidsLimit)
	if spec.PidsLimit > 0 {
		pids = spec.PidsLimit
	}
	network, _ := networkMode(spec.Network) // validated
	hc := &container.HostConfig{
		CapDrop: []string{"ALL"},
		// Only for the keepers: each drops them from the bounding set of
		// everything it starts, so no command of the sandbox ever holds one
		// (see doc.go, and protect in the keeper).
		CapAdd:         keeperCaps,
		SecurityOpt:    []string{"no-new-privileges"},
		Privileged:     false,
		Init:           &init,
		NetworkMode:    network,
		ReadonlyRootfs: spec.ReadOnlyRoot,
		IpcMode:        "private",
		RestartPolicy:  container.RestartPolicy{Name: container.RestartPolicyDisabled},
		Mounts:         mounts,
		Resources:      container.Resources{PidsLimit: &pids},
	}
	if spec.CPUs > 0 {
		hc.NanoCPUs = int64(spec.CPUs * 1e9)
	}
	if spec.MemoryMB > 0 {
		hc.Memory = spec.MemoryMB << 20
		hc.MemorySwap = hc.Memory // no swap: the limit is the limit
	}
	return hc
}

// sandboxMounts: the keeper (read-only), the spec's store volumes, and on a
// read-only root a scratch volume for /tmp and for the work directory.
func (p *Provider) sandboxMounts(ctx context.Context, spec protocol.Spec, owner provider.Owner, refs helperRefs) ([]mount.Mount, error) {
	mounts := []mount.Mount{{
		Type: mount.TypeVolume, Source: refs.volume, Target: keeperproto.Dir, ReadOnly: true,
		VolumeOptions: &mount.VolumeOptions{NoCopy: true},
	}}
	covered := map[string]bool{}
	for _, m := range spec.Volumes {
		access, err := p.ensureStoreVolume(ctx, m.Name, owner)
		if err != nil {
			return nil, err
		}
		if access == provider.VolumeReadOnly && !m.ReadOnly {
			return nil, provider.ReadOnlyGrant(m.Name)
		}
		mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: m.Name, Target: m.Path, ReadOnly: m.ReadOnly})
		covered[m.Path] = true
	}
	if spec.ReadOnlyRoot {
		// Anonymous volumes, not tmpfs: the archive API (write_file) sees
		// volumes but not a tmpfs, and disk is cheaper than memory. They are
		// labelled and go away with the container.
		scratch := baseLabels(RoleScratch)
		scratch[owner.Key] = owner.InstallID
		for _, dir := range []string{"/tmp", spec.Workdir} {
			if dir == "" || dir == "/" || covered[dir] || underAny(dir, spec.Volumes) {
				continue
			}
			covered[dir] = true
			mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Target: dir, VolumeOptions: &mount.VolumeOptions{Labels: scratch}})
		}
	}
	return mounts, nil
}

// DefaultReadOnlyWorkdir is the work directory of a sandbox with a read-only
// root when neither spec.workdir nor the image names one: "/" cannot be made
// writable, and the work directory must be.
const DefaultReadOnlyWorkdir = "/work"

// workdirFor is the sandbox's work directory: spec.workdir, else the
// image's; on a read-only root with neither, DefaultReadOnlyWorkdir. ""
// leaves it to the engine (the image's, else "/").
func workdirFor(spec protocol.Spec, imageWorkdir string) string {
	switch {
	case spec.Workdir != "":
		return spec.Workdir
	case !spec.ReadOnlyRoot:
		return ""
	case imageWorkdir != "" && imageWorkdir != "/":
		return path.Clean(imageWorkdir)
	}
	return DefaultReadOnlyWorkdir
}

func underAny(dir string, vols []protocol.VolumeMount) bool {
	for _, v := range vols {
		if strings.HasPrefix(dir, v.Path+"/") {
			return true
		}
	}
	return false
}
