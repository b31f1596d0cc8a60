package local

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// meta is a sandbox's meta.json. It is written once, atomically, before the
// sandbox directory gets its final name, so a listed sandbox always has one.
// It holds spec.env (the sandbox's environment survives a restart, as a
// container's does), which is why it is mode 0600 in a 0700 tree.
type meta struct {
	ID        string            `json:"id"`
	Tags      map[string]string `json:"tags"`
	CreatedAt time.Time         `json:"created_at"`
	Image     string            `json:"image,omitempty"`
	Spec      protocol.Spec     `json:"spec"`
	ExpiresAt *time.Time        `json:"expires_at,omitempty"`
}

func (m *meta) expired(now time.Time) bool {
	return m.ExpiresAt != nil && !now.Before(*m.ExpiresAt)
}

const (
	metaFile    = "meta.json"
	rootDir     = "root"
	stagingName = ".creating-"
)

func (p *Provider) sandboxDir(id string) string { return filepath.Join(p.sandboxes, id) }
func (p *Provider) rootOf(id string) string     { return filepath.Join(p.sandboxes, id, rootDir) }

// Create builds the sandbox under a staging name and renames it into place
// only when it is complete: a crash mid-create leaves nothing listed.
func (p *Provider) Create(ctx context.Context, spec protocol.Spec, owner provider.Owner, tags map[string]string) (string, error) {
	if err := p.Start(); err != nil {
		return "", err
	}
	if err := provider.RefuseUnannounced(p.Info(), nil, &spec); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := owner.Validate(); err != nil {
		return "", err
	}
	if err := provider.CheckHostTags(tags); err != nil {
		return "", err
	}
	if spec.LifetimeS < 0 {
		return "", protocol.Errorf(protocol.KindInvalidRequest, "sandbox create: lifetime_s must not be negative")
	}
	isolated := p.isolated()
	if spec.RequireIsolation && !isolated {
		return "", protocol.Errorf(protocol.KindInvalidRequest, "spec.require_isolation: local runs unisolated here (it needs Linux and a working bubblewrap; the resident logged why at start)")
	}
	mounts, err := checkMounts(spec.Volumes, spec.Workdir, isolated)
	if err != nil {
		return "", err
	}
	spec.Volumes = mounts
	spec.Env = maps.Clone(spec.Env)
	// Before anything is built: a volume owner may not mount is refused in
	// the words of a missing one, unwrapped.
	volumeDirs := make([]string, len(mounts))
	for i, v := range mounts {
		if volumeDirs[i], err = p.mountVolume(owner, v.Name); err != nil {
			return "", err
		}
	}

	id := newID()
	m := &meta{ID: id, Tags: maps.Clone(tags), CreatedAt: p.now().UTC(), Image: spec.Image, Spec: spec}
	if m.Tags == nil {
		m.Tags = map[string]string{}
	}
	m.Tags[owner.Key] = owner.InstallID // last, so no host tag can claim ownership
	if spec.LifetimeS > 0 {
		deadline := m.CreatedAt.Add(time.Duration(spec.LifetimeS) * time.Second)
		m.ExpiresAt = &deadline
	}

	staging := filepath.Join(p.sandboxes, stagingName+id)
	if err := p.build(staging, m, volumeDirs, isolated); err != nil {
		_ = os.RemoveAll(staging)
		return "", fmt.Errorf("sandbox create: %w", err)
	}
	if err := os.Rename(staging, p.sandboxDir(id)); err != nil {
		_ = os.RemoveAll(staging)
		return "", fmt.Errorf("sandbox create: %w", err)
	}
	if err := p.startSandbox(ctx, id, m); err != nil {
		_, _ = p.remove(id, "not started")
		return "", fmt.Errorf("sandbox create: %w", err)
	}
	p.rememberTags(id, m.Tags)
	p.arm(id, m.ExpiresAt)
	p.log.Info("sandbox created", zap.String("sandbox_id", id), zap.Int64("lifetime_s", spec.LifetimeS))
	return id, nil
}

// build lays out a sandbox in dir: the root, the mount points of its
// volumes (isolated: bwrap binds each volume there) or links to them (at
// volumeDirs, in the order of m.Spec.Volumes), the workdir and finally
// meta.json.
func (p *Provider) build(dir string, m *meta, volumeDirs []string, isolated bool) error {
	root := filepath.Join(dir, rootDir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	if err := os.Mkdir(root, 0o755); err != nil {
		return err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer r.Close()
	for i, v := range m.Spec.Volumes {
		volume := volumeDirs[i]
		if parent := path.Dir(v.Path); parent != "." {
			if err := r.MkdirAll(parent, 0o755); err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
		}
		if isolated {
			if err := r.Mkdir(v.Path, 0o755); err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
			continue
		}
		// Unisolated, a symlink is the only way to show a directory
		// elsewhere without privileges. Paths through it are resolved by
		// p.resolve, not by following the link, which os.Root would
		// (rightly) refuse.
		if err := r.Symlink(volume, v.Path); err != nil {
			return fmt.Errorf("volume %s: %w", v.Name, err)
		}
	}
	if m.Spec.Workdir != "" {
		base, rel := p.resolve(root, m.Spec.Volumes, sandboxRel(m.Spec.Workdir))
		if err := mkdirIn(base, rel); err != nil {
			return fmt.Errorf("workdir: %w", err)
		}
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(dir, metaFile, data, 0o600)
}

// checkMounts validates spec.volumes and returns them with their paths
// relative to the sandbox root; a relative mount path is taken in the work
// directory. Isolated, an absolute path is the path commands see (the
// volume is bound there), except over a host system directory, /proc or
// /dev. Unisolated, a command that opens an absolute path such as /data
// opens the host's /data, never the volume, so a mount promising /data
// would be a lie: only relative paths are taken.
func checkMounts(volumes []protocol.VolumeMount, workdir string, isolated bool) ([]protocol.VolumeMount, error) {
	out := make([]protocol.VolumeMount, 0, len(volumes))
	for _, v := range volumes {
		switch {
		case !validVolumeName(v.Name):
			return nil, protocol.Errorf(protocol.KindInvalidRequest, "volume name %q must be 1-64 characters of A-Za-z0-9._- (not . or ..)", v.Name)
		case v.ReadOnly:
			return nil, protocol.Errorf(protocol.KindInvalidRequest, "volume %q: the local provider cannot enforce read_only (capabilities.read_only_volumes is false); mount it read-write or use an isolating provider", v.Name)
		case path.IsAbs(v.Path) && !isolated:
			return nil, protocol.Errorf(protocol.KindInvalidRequest, "volume %q: path %q is absolute, but local runs unisolated here (bubblewrap is missing): a command that opens %s opens the host's %s, not the volume; give a relative path such as %q, taken in the work directory", v.Name, v.Path, v.Path, v.Path, strings.TrimLeft(v.Path, "/"))
		case v.Path == "" || path.Clean(v.Path) == "." || path.Clean(v.Path) == "/" || slices.Contains(strings.Split(v.Path, "/"), ".."):
			return nil, protocol.Errorf(protocol.KindInvalidRequest, "volume %q: path %q must name a directory below the sandbox root, without \"..\"", v.Name, v.Path)
		}
		v.Path = workRel(workdir, v.Path)
		if v.Path == "." {
			return nil, protocol.Errorf(protocol.KindInvalidRequest, "volume %q: path must name a directory below the sandbox root", v.Name)
		}
		if isolated && reservedMountPoint(v.Path) {
			return nil, protocol.Errorf(protocol.KindInvalidRequest, "volume %q: path %q is, or holds, a host system directory, /proc or /dev of the sandbox", v.Name, "/"+v.Path)
		}
		for _, other := range out {
			_, inside := within(v.Path, other.Path)
			_, contains := within(other.Path, v.Path)
			if inside || contains {
				return nil, protocol.Errorf(protocol.KindInvalidRequest, "volume paths %q and %q overlap", "/"+other.Path, "/"+v.Path)
			}
		}
		out = append(out, v)
	}
	return out, nil
}

func mkdirIn(base, rel string) error {
	r, err := os.OpenRoot(base)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.MkdirAll(rel, 0o755)
}

// writeFileAtomic writes dir/name through a temporary file and a rename, so
// a reader sees the old content or the new, never a torn file.
func writeFileAtomic(dir, name string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}
