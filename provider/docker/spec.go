package docker

import (
	"math"
	"path"
	"regexp"
	"strings"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/container"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
)

// Hardened defaults; doc.go explains each and how a host changes it.
const (
	// DefaultPidsLimit caps processes and threads per sandbox unless
	// spec.pids_limit says otherwise; it stops a fork bomb.
	DefaultPidsLimit = 512
	// minMemoryMB is the engine's own floor for a memory limit.
	minMemoryMB = 6
)

// defaultPath is set when neither the image nor spec.env has a PATH, so
// commands resolve as they would under `docker run`.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

var volumeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]+$`)

// validateSpec refuses anything the provider would otherwise have to guess
// at or that would weaken isolation, before any call to the engine.
func validateSpec(spec protocol.Spec) error {
	bad := func(format string, args ...any) error {
		return protocol.Errorf(protocol.KindInvalidRequest, "spec: "+format, args...)
	}
	if spec.Image == "" {
		return bad("image is required by the docker provider")
	}
	if _, err := reference.ParseNormalizedNamed(spec.Image); err != nil {
		return bad("image %q is not a valid reference: %v", spec.Image, err)
	}
	if spec.Workdir != "" && !cleanAbs(spec.Workdir) {
		return bad("workdir %q must be an absolute, clean path", spec.Workdir)
	}
	if math.IsNaN(spec.CPUs) || spec.CPUs < 0 || spec.CPUs > 1024 {
		return bad("cpus %v is out of range", spec.CPUs)
	}
	if spec.MemoryMB < 0 || (spec.MemoryMB > 0 && spec.MemoryMB < minMemoryMB) || spec.MemoryMB > 1<<30 {
		return bad("memory_mb %d: give at least %d (or 0 for no limit)", spec.MemoryMB, minMemoryMB)
	}
	if spec.PidsLimit < 0 || spec.LifetimeS < 0 {
		return bad("pids_limit and lifetime_s must not be negative")
	}
	if _, err := networkMode(spec.Network); err != nil {
		return err
	}
	for k, v := range spec.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.Contains(v, "\x00") {
			return bad("env %q: names must be non-empty without '=' or NUL, values without NUL", k)
		}
	}
	for _, m := range spec.Volumes {
		if !volumeName.MatchString(m.Name) {
			return bad("volume name %q must match %s", m.Name, volumeName)
		}
		if !(cleanAbs(m.Path) && m.Path != "/") && !cleanRel(m.Path) {
			return bad("volume %q: path %q must be a clean absolute path other than /, or a clean relative one without \"..\" (taken in the work directory)", m.Name, m.Path)
		}
	}
	return nil
}

func cleanRel(p string) bool {
	return p != "" && !path.IsAbs(p) && path.Clean(p) == p && p != "." && p != ".." &&
		!strings.HasPrefix(p, "../") && !strings.ContainsRune(p, 0)
}

// mountPaths takes relative volume paths in the work directory (as
// write_file takes relative paths) and refuses two mounts at one path.
func mountPaths(vols []protocol.VolumeMount, workdir string) ([]protocol.VolumeMount, error) {
	out := make([]protocol.VolumeMount, 0, len(vols))
	seen := map[string]bool{}
	for _, m := range vols {
		if !path.IsAbs(m.Path) {
			m.Path = path.Join("/", workdir, m.Path)
		}
		if !cleanAbs(m.Path) || m.Path == "/" || seen[m.Path] {
			return nil, protocol.Errorf(protocol.KindInvalidRequest, "spec: volume %q: path %q must be distinct, and not / or the keeper's directory", m.Name, m.Path)
		}
		seen[m.Path] = true
		out = append(out, m)
	}
	return out, nil
}

// cleanAbs: absolute, already clean, and clear of the keeper's directory.
func cleanAbs(p string) bool {
	return path.IsAbs(p) && path.Clean(p) == p && !strings.ContainsRune(p, 0) &&
		p != keeperproto.Dir && !strings.HasPrefix(p, keeperproto.Dir+"/")
}

// networkMode maps spec.network to a Docker network mode: none unless the
// host names a network. Modes that share a namespace with the host or with
// another container are refused: they would undo the isolation.
func networkMode(name string) (container.NetworkMode, error) {
	switch {
	case name == "" || name == "none":
		return "none", nil
	case name == "host" || strings.Contains(name, ":"):
		return "", protocol.Errorf(protocol.KindInvalidRequest, "spec: network %q would share another namespace; use \"none\", \"bridge\" or a network name", name)
	}
	return container.NetworkMode(name), nil
}

// containerEnv is the sandbox's own environment: spec.env (execs inherit
// it and may override it) plus PATH when the image has none. Docker adds
// the image's ENV and HOME; nothing comes from the resident's environment.
func containerEnv(spec protocol.Spec, imageEnv []string) []string {
	var env []string
	hasPath := false
	for _, kv := range imageEnv {
		hasPath = hasPath || strings.HasPrefix(kv, "PATH=")
	}
	for k, v := range spec.Env {
		env = append(env, k+"="+v)
		hasPath = hasPath || k == "PATH"
	}
	if !hasPath {
		env = append(env, "PATH="+defaultPath)
	}
	return env
}
