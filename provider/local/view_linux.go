//go:build linux

package local

import (
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/resident-dev/resident/protocol"
)

// networkHost is the spec.network value that shares the host's network
// with an isolated sandbox; any other leaves it only its own loopback.
const networkHost = "host"

// viewFor checks cwd and prepares the view an isolated exec of the sandbox
// gets. cwd is taken as the command will see it: inside the sandbox's
// root, a volume, or a host system directory (read-only, but a fine place
// to run from).
func (p *Provider) viewFor(sandboxID string, m *meta, cwd string) (view, error) {
	root := p.rootOf(sandboxID)
	abs := "/" + strings.TrimPrefix(sandboxRel(cwd), ".")
	abs = path.Clean(abs)
	if readOnlyPath(abs) {
		if info, err := os.Stat(abs); err != nil {
			return view{}, cwdError(cwd, err)
		} else if !info.IsDir() {
			return view{}, cwdNotDirectory(cwd)
		}
	} else {
		dirFile, err := p.openDir(root, m.Spec.Volumes, cwd)
		if err != nil {
			return view{}, err
		}
		_ = dirFile.Close()
	}
	if err := prepareView(root, m.Spec.Volumes); err != nil {
		return view{}, fsError("exec", cwd, err)
	}
	v := view{root: root, cwd: abs, network: m.Spec.Network == networkHost}
	for _, vol := range m.Spec.Volumes {
		v.volumes = append(v.volumes, bindTo{src: p.volumeDir(vol.Name), dst: "/" + vol.Path})
	}
	return v, nil
}

// hostPath is where an absolute sandbox path lives on the host, for the
// resident's own checks: a system directory is the host's own, a path in a
// volume is in the volume, and anything else is in the sandbox root.
func (p *Provider) hostPath(root string, mounts []protocol.VolumeMount, abs string) string {
	if readOnlyPath(abs) {
		return abs
	}
	base, rest := p.resolve(root, mounts, sandboxRel(abs))
	return filepath.Join(base, rest)
}

// lookPathIn finds argv[0] as execvp inside the sandbox will: with the
// sandbox's PATH, from cwd (absolute, in the sandbox). toHost maps each
// candidate to the host path the check looks at.
func lookPathIn(name, pathEnv, cwd string, toHost func(string) string) (string, error) {
	if strings.Contains(name, "/") {
		abs := name
		if !path.IsAbs(abs) {
			abs = path.Join(cwd, abs)
		}
		if isExecutable(toHost(abs)) {
			return abs, nil
		}
		return "", programError(name, toHost(abs))
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !path.IsAbs(d) {
			d = path.Join(cwd, d)
		}
		if candidate := path.Join(d, name); isExecutable(toHost(candidate)) {
			return candidate, nil
		}
	}
	return "", missingProgram(name, "executable file not found in $PATH")
}
