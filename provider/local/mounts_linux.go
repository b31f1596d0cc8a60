//go:build linux

package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
)

// view is the filesystem an isolated exec sees: the sandbox's own directory
// as its root "/", the host's system directories read-only over it, and
// each volume at its mount path. Paths therefore mean the same thing to
// the command as to cwd, write_file and the store: "/x" is root/x for all
// of them. Everything else of the host (home directories, /root, the
// resident's state directory, /run, /var/run, the host's /tmp) is simply
// not mounted: /tmp, /run and /home are the sandbox's own directories.
type view struct {
	root    string   // host path of the sandbox root, mounted at /
	volumes []bindTo // host volume directory -> absolute path in the sandbox
	network bool     // share the host's network; otherwise loopback only
	cwd     string   // absolute, in the sandbox
}

type bindTo struct{ src, dst string }

// hostSystemDirs are shown read-only so the machine's toolchains work. A
// top-level symlink (merged /usr: /bin -> usr/bin) is bound as the
// directory it names, so that it is a mount point in the sandbox and no
// command can replace it by a link of its own for the next exec.
var hostSystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// systemBinds resolves hostSystemDirs once: which exist, and where.
var systemBinds = sync.OnceValue(func() []bindTo {
	var out []bindTo
	for _, dir := range hostSystemDirs {
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			continue // absent on this machine
		}
		if info, err := os.Stat(real); err == nil && info.IsDir() {
			out = append(out, bindTo{src: real, dst: dir})
		}
	}
	return out
})

// readOnlyPath reports whether an absolute sandbox path lies in a host
// system directory, which no write can reach.
func readOnlyPath(abs string) bool {
	for _, b := range systemBinds() {
		if _, ok := within(sandboxRel(abs), sandboxRel(b.dst)); ok {
			return true
		}
	}
	return false
}

// reservedMountPoint reports whether a volume may not be mounted at rel:
// a system directory, /proc or /dev, or above one of them.
func reservedMountPoint(rel string) bool {
	points := []string{"proc", "dev", strings.TrimPrefix(keeperproto.Dir, "/")}
	for _, b := range systemBinds() {
		points = append(points, sandboxRel(b.dst))
	}
	for _, p := range points {
		_, below := within(rel, p)
		_, above := within(p, rel)
		if below || above {
			return true
		}
	}
	return false
}

// mountArgs are bwrap's filesystem and namespace options for v. etc are
// the options that make the sandbox's /etc (etcMountArgs); without them
// it is the host's, read-only (the probe).
func (v view) mountArgs(etc []string) []string {
	args := []string{"--bind", v.root, "/"}
	for _, b := range systemBinds() {
		if b.dst == "/etc" && etc != nil {
			args = append(args, etc...)
			continue
		}
		args = append(args, "--ro-bind", b.src, b.dst)
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev")
	for _, dir := range volumeAncestors(v.volumes) {
		args = append(args, "--bind", filepath.Join(v.root, dir), "/"+dir)
	}
	for _, b := range v.volumes {
		args = append(args, "--bind", b.src, b.dst)
	}
	args = append(args, "--unshare-ipc", "--unshare-uts", "--hostname", "sandbox")
	if !v.network {
		args = append(args, "--unshare-net") // a network namespace of its own: only lo
	}
	return append(args, "--chdir", v.cwd)
}

// volumeAncestors are the directories above the volumes' mount points,
// parents first (relative to the root). bwrap follows links in a mount's
// destination, so a command that swapped a parent for a link out of the
// sandbox (renaming the directory away) would have the next exec's bwrap
// create the mount point there, on the host. Each of them is bound onto
// itself, which makes it a mount point in every exec's namespace: no
// command of the sandbox can rename or replace it, and prepareView checks
// them while nothing of the sandbox runs.
func volumeAncestors(volumes []bindTo) []string {
	var out []string
	seen := map[string]bool{}
	for _, b := range volumes {
		var chain []string
		for dir := path.Dir(sandboxRel(b.dst)); dir != "." && !seen[dir]; dir = path.Dir(dir) {
			seen[dir] = true
			chain = append(chain, dir)
		}
		for i := len(chain) - 1; i >= 0; i-- {
			out = append(out, chain[i])
		}
	}
	return out
}

// sandboxTmp is the mode of the sandbox's /tmp, as on any Linux root.
const sandboxTmp = fs.ModeSticky | 0o777

// prepareView makes every mount point an exec's bwrap needs in the sandbox
// root, through os.Root: bwrap would create a missing one itself, but by
// following any link a command left in the root, possibly out of it. A
// mount point that is not a real directory (a link made by an unisolated
// exec, or the volume link an older sandbox has) is replaced by one.
func prepareView(root string, mounts []protocol.VolumeMount) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer r.Close()
	points := []string{"proc", "dev", "tmp", strings.TrimPrefix(keeperproto.Dir, "/")}
	for _, b := range systemBinds() {
		points = append(points, sandboxRel(b.dst))
	}
	var volumes []bindTo
	for _, m := range mounts {
		volumes = append(volumes, bindTo{dst: "/" + m.Path})
	}
	points = append(points, volumeAncestors(volumes)...) // each one checked, parents first
	for _, m := range mounts {
		points = append(points, m.Path)
	}
	for _, p := range points {
		if err := ensureDir(r, p); err != nil {
			return fmt.Errorf("mount point /%s: %w", p, err)
		}
	}
	if info, err := r.Lstat("tmp"); err == nil && info.Mode()&fs.ModeSticky == 0 {
		_ = r.Chmod("tmp", sandboxTmp)
	}
	return nil
}

func ensureDir(r *os.Root, rel string) error {
	info, err := r.Lstat(rel)
	switch {
	case err == nil && info.IsDir():
		return nil
	case err == nil:
		if err := r.Remove(rel); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if parent := path.Dir(rel); parent != "." {
		if err := r.MkdirAll(parent, 0o755); err != nil {
			return err
		}
	}
	if err := r.Mkdir(rel, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}
