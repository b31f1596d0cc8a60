//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// defaultPath is the PATH a process gets when the host sets none: the usual
// container default, so commands resolve the same way they would in Docker.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Exec runs argv in the sandbox: under bwrap in namespaces of its own, with
// the sandbox's filesystem (see view and bwrapArgs), or, where bwrap is
// missing, as an unisolated host process in a directory inside the
// sandbox, in its own process group. Completion is the main
// process's exit; see process.
func (p *Provider) Exec(ctx context.Context, sandboxID string, req provider.ExecRequest) (provider.Process, error) {
	if err := p.Start(); err != nil {
		return nil, err
	}
	if err := provider.RefuseUnannounced(p.Info(), &req, nil); err != nil {
		return nil, err
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return nil, protocol.Errorf(protocol.KindInvalidRequest, "exec: argv must not be empty")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	bwrap := p.isolation()
	if req.Exclusive && bwrap == "" {
		return nil, errUnisolatedExclusive
	}
	m, err := p.lookup(sandboxID)
	if err != nil {
		return nil, err
	}
	root := p.rootOf(sandboxID)
	cwd := req.Cwd
	if cwd == "" {
		cwd = m.Spec.Workdir
	}
	var bin, dir string
	var env []string
	var v view
	if bwrap != "" {
		if v, err = p.viewFor(sandboxID, m, cwd); err != nil {
			return nil, p.goneOr(sandboxID, err)
		}
		env = buildEnv(m.Spec.Env, req.Env, "/")
		// Found as bwrap will find it inside, to refuse a missing one
		// before anything starts; argv goes to bwrap as the host gave it.
		toHost := func(abs string) string { return p.hostPath(root, m.Spec.Volumes, abs) }
		if _, err := lookPathIn(req.Argv[0], envValue(env, "PATH"), v.cwd, toHost); err != nil {
			return nil, p.goneOr(sandboxID, err)
		}
		dir = root
	} else {
		dirFile, err := p.openDir(root, m.Spec.Volumes, cwd)
		if err != nil {
			return nil, p.goneOr(sandboxID, err)
		}
		// The process starts in the directory the check opened, named
		// through the open descriptor: a link swapped after the check
		// cannot move it (the descriptor is inherited across fork, so the
		// child's chdir and execve resolve it before close-on-exec closes
		// it).
		defer dirFile.Close()
		dir = fmt.Sprintf("/proc/self/fd/%d", dirFile.Fd())
		env = buildEnv(m.Spec.Env, req.Env, root)
		if bin, err = lookPath(req.Argv[0], envValue(env, "PATH"), dir); err != nil {
			return nil, p.goneOr(sandboxID, err)
		}
		if rel, inside := strings.CutPrefix(bin, dir+"/"); inside {
			// Relative to the working directory the child changes into: a
			// script's interpreter opens this path after close-on-exec has
			// closed the descriptor dir names.
			bin = "./" + rel
		}
	}
	cgroups, err := sandboxCgroups(sandboxID, m.Spec)
	if err != nil {
		return nil, p.goneOr(sandboxID, &protocol.Error{Kind: protocol.KindTransient, Msg: "exec: the sandbox's limits", Err: err})
	}
	opts := startOptions{stdin: req.Stdin, isolated: bwrap != "", exclusive: req.Exclusive, cgroups: cgroups}
	for attempt := 1; ; attempt++ {
		cmd := &exec.Cmd{
			Path: bin,
			Args: slices.Clone(req.Argv),
			Env:  env,
			Dir:  dir,
			// Own group, so one signal reaches the whole job; Pdeathsig, so
			// a resident that dies without cleaning up does not leave the
			// main process running (isolated, that is bwrap: see the
			// package doc).
			SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
		}
		if bwrap != "" {
			cmd.Path, cmd.Args = bwrap, bwrapArgs(bwrap, statusFD, v, req.Argv)
		}
		pr, err := p.start(ctx, sandboxID, cmd, opts)
		if err != nil && protocol.KindOf(err) == protocol.KindTransient && pidsFull(cgroups) {
			// bwrap could not be forked, or could not fork: as on Docker,
			// an exec that does not fit in pids_limit is quota.
			return nil, protocol.Errorf(protocol.KindQuota, "exec: the sandbox's pids_limit (%d) is full: %v", m.Spec.PidsLimit, err)
		}
		var setupErr *setupError
		if errors.As(err, &setupErr) && attempt < setupAttempts {
			p.log.Info("exec: bwrap setup failed, trying again", zap.String("sandbox_id", sandboxID), zap.Error(err))
			continue
		}
		if setupErr != nil {
			return nil, protocol.Errorf(protocol.KindTransient, "exec: %w", err)
		}
		return pr, err
	}
}

// openDir opens the host's cwd as a directory inside the sandbox (or a
// volume mounted in it), through os.Root so no symlink leads out.
func (p *Provider) openDir(root string, mounts []protocol.VolumeMount, cwd string) (*os.File, error) {
	base, rel := p.resolve(root, mounts, sandboxRel(cwd))
	r, err := os.OpenRoot(base)
	if err != nil {
		return nil, fmt.Errorf("exec cwd: %w", err)
	}
	defer r.Close()
	f, err := r.Open(rel)
	if err != nil {
		return nil, cwdError(cwd, err)
	}
	if info, err := f.Stat(); err != nil || !info.IsDir() {
		_ = f.Close()
		return nil, cwdNotDirectory(cwd)
	}
	return f, nil
}

// buildEnv is the whole environment of a sandbox process: the sandbox's
// spec env, the exec env over it, and PATH and HOME when neither sets them.
// Nothing comes from the resident's own environment.
func buildEnv(specEnv, execEnv map[string]string, home string) []string {
	merged := map[string]string{"PATH": defaultPath, "HOME": home}
	for k, v := range specEnv {
		merged[k] = v
	}
	for k, v := range execEnv {
		merged[k] = v
	}
	env := make([]string, 0, len(merged))
	for k, v := range merged {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env
}

func envValue(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// lookPath finds argv[0] with the sandbox process's PATH, not the
// resident's (exec.LookPath would use the resident's environment).
func lookPath(name, pathEnv, dir string) (string, error) {
	if strings.Contains(name, "/") {
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		if isExecutable(path) {
			return path, nil
		}
		// The name as the host gave it: dir is a descriptor path.
		return "", programError(name, path)
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		if candidate := filepath.Join(d, name); isExecutable(candidate) {
			return candidate, nil
		}
	}
	return "", missingProgram(name, "executable file not found in $PATH")
}

func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0
}
