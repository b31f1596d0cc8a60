package docker

import (
	"cmp"
	"context"
	"errors"
	"maps"
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
	return p.create(ctx, spec, owner, tags, nil)
}

// create is Create; idle, when set, makes the sandbox an idle pool member
// (pool.go).
func (p *Provider) create(ctx context.Context, spec protocol.Spec, owner provider.Owner, tags map[string]string, idle *provider.PoolMark) (string, error) {
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
	name := markIdle(labels, idle)
	if spec.Image, err = p.resolveOwnedImage(ctx, spec.Image, owner); err != nil {
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
	if err := checkOwnedImage(spec.Image, imageLabels, owner); err != nil {
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
	mode := p.execMode
	for {
		id, err := p.createIn(ctx, mode, spec, labels, imageEnv, imageLabels, mounts, name, owner)
		if err == errNoChannel && mode == ExecModeChannel {
			if spec.User != "" {
				return "", protocol.Errorf(protocol.KindInvalidRequest, "spec.user: the keeper channel cannot be had for image %q (its keeper did not answer), and the docker exec path cannot run a sandbox as another user", spec.Image)
			}
			p.log.Info("sandbox: the keeper channel cannot be had for this image; falling back to docker exec", zap.String("image", spec.Image))
			mode = ExecModeExec
			continue
		}
		return id, err
	}
}

// errNoChannel is a channel-mode sandbox whose keeper never answered on
// its channel (an image or engine it cannot run in): create falls back to
// the exec mode.
var errNoChannel = errors.New("the sandbox's keeper channel cannot be had")

// createIn creates and starts the container in one exec mode. In the
// channel mode the keeper is the container's init, with stdin open and no
// logs (the attach stream is never written to the engine's logs: neither
// its cost nor what it carries), and its channel is opened at once, so a
// sandbox whose keeper cannot serve is found here, not at its first exec.
func (p *Provider) createIn(ctx context.Context, mode string, spec protocol.Spec, labels map[string]string, imageEnv []string, imageLabels map[string]string, mounts []mount.Mount, name string, owner provider.Owner) (string, error) {
	labels = maps.Clone(labels)
	labels[LabelExecMode] = mode
	lifetime := strconv.FormatInt(spec.LifetimeS, 10)
	cfg := &container.Config{
		Image:      spec.Image,
		Entrypoint: []string{keeperproto.Path, keeperproto.CmdAlive, lifetime},
		Cmd:        []string{},
		Env:        containerEnv(spec, imageEnv),
		WorkingDir: spec.Workdir,
		Labels:     labels,
		// The keeper ignores the SIGTERM docker-init (or the engine) would
		// send (see the keeper): the container's processes die with pid 1
		// either way, so nothing is lost by not asking.
		StopSignal: "SIGKILL",
	}
	hc := hostConfig(spec, mounts)
	if mode == ExecModeChannel {
		cfg.Entrypoint = append([]string{keeperproto.Path, keeperproto.CmdServe}, p.serveFlags...)
		cfg.Entrypoint = append(cfg.Entrypoint, "-lifetime", lifetime)
		cfg.OpenStdin, cfg.AttachStdin, cfg.AttachStdout, cfg.AttachStderr = true, true, true, true
		noInit := false
		hc.Init = &noInit // the keeper is PID 1 and reaps
		hc.LogConfig = container.LogConfig{Type: "none"}
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	created, err := p.cli.ContainerCreate(cctx, client.ContainerCreateOptions{Config: cfg, HostConfig: hc, Name: name})
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
	if mode == ExecModeChannel {
		if err := p.firstChannel(cctx, created.ID); err != nil {
			p.chans.drop(created.ID)
			p.discard(cctx, created.ID, "its keeper channel failed")
			return "", err
		}
	}
	if name != "" {
		p.idle.add(created.ID, name)
	}
	p.log.Info("sandbox created", zap.String("sandbox", created.ID[:12]), zap.String("image", spec.Image), zap.String("owner", owner.InstallID), zap.String("exec_mode", mode))
	return created.ID, nil
}

// firstChannel opens a new sandbox's channel. A keeper that exited instead
// of answering (an image or engine it cannot run in) is errNoChannel: the
// open ends when the engine sees the container stop (openChannel).
func (p *Provider) firstChannel(ctx context.Context, id string) error {
	_, _, err := p.channelFor(ctx, id)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return err
	case protocol.KindOf(err) == protocol.KindConflict, p.stopsSoon(ctx, id):
		return errNoChannel // the keeper exited: the container stopped
	}
	return err
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
