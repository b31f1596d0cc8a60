//go:build linux

package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"go.uber.org/zap"
)

// bwrapPackage is what an operator installs to get isolated execs.
const bwrapPackage = "bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"

// probeArgs run argv as a sandbox's init runs (initArgs): as pid 1 of a
// pid namespace of its own, with the view's mounts and namespaces and only
// the keeper's capabilities, reporting on statusFD. A bwrap that cannot
// (no --as-pid-1, user namespaces off, /proc not mountable) fails here.
func probeArgs(bwrap string, statusFD int, v view, argv []string) []string {
	args := append([]string{bwrap}, v.mountArgs(nil)...)
	args = append(args, "--unshare-pid", "--as-pid-1", "--json-status-fd", fmt.Sprint(statusFD), "--cap-drop", "ALL")
	for _, c := range keeperCaps {
		args = append(args, "--cap-add", c)
	}
	return append(append(args, "--"), argv...)
}

// isolation finds bwrap and checks that it works here (user namespaces may
// be off, or /proc may not be mountable), once per provider. Without it
// local runs execs unisolated, as it did before bwrap, and says so once:
// the README's first command must work on a machine that lacks it.
func (p *Provider) isolation() string {
	p.isolateOnce.Do(func() {
		path, err := probeBwrap()
		for attempt := 1; err != nil && path != "" && attempt < setupAttempts; attempt++ {
			path, err = probeBwrap() // a failed setup can be a reason of the moment
		}
		if err != nil {
			p.log.Warn("local execs run UNISOLATED: a command can signal the resident and escape the tree kill; install "+bwrapPackage, zap.Error(err))
			return
		}
		p.bwrap = path
	})
	return p.bwrap
}

// isolated reports whether execs run under bwrap, in the sandbox's view.
func (p *Provider) isolated() bool { return p.isolation() != "" }

// inSystemDir reports whether rel (relative to the sandbox root) is where
// an isolated sandbox sees a host system directory, read-only: a write
// there would land under the mount, where no command sees it.
func (p *Provider) inSystemDir(rel string) bool { return p.isolated() && readOnlyPath("/"+rel) }

// bwrapName is the program looked up on the resident's PATH (a test
// names a missing one to play a machine without bubblewrap).
var bwrapName = "bwrap"

// probeBwrap runs bwrap once as every sandbox's init will. It returns bwrap's path
// with the error when bwrap exists but failed, so that a retry makes sense.
func probeBwrap() (string, error) {
	path, err := exec.LookPath(bwrapName)
	if err != nil {
		return "", fmt.Errorf("bwrap not found: %w", err)
	}
	info, w, err := os.Pipe()
	if err != nil {
		return "", err
	}
	defer info.Close()
	root, err := os.MkdirTemp("", "resident-bwrap-probe-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(root)
	if err := prepareView(root, nil); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := probeArgs(path, probeStatusFD, view{root: root, cwd: "/"}, []string{"true"})
	cmd := exec.CommandContext(ctx, path, args[1:]...)
	cmd.Env = []string{"PATH=" + defaultPath}
	cmd.ExtraFiles = []*os.File{w}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	_ = w.Close()
	if err != nil {
		return path, fmt.Errorf("%s does not work here: %w: %s", path, err, strings.TrimSpace(out.String()))
	}
	dec := json.NewDecoder(info)
	var ns namespaceInfo
	var exit exitDocument
	if dec.Decode(&ns) != nil || ns.InitPID <= 0 || dec.Decode(&exit) != nil || exit.ExitCode == nil {
		return path, fmt.Errorf("%s: no status report on --json-status-fd", path)
	}
	return path, nil
}

// probeStatusFD is the probe's --json-status-fd: cmd.ExtraFiles[0].
const probeStatusFD = 3

// namespaceInfo is the first document bwrap writes to --json-status-fd,
// right after it made the namespace: the host pid of its pid 1 and the
// namespace's inode. A second one, {"exit-code": N}, follows at the end
// only if the command was started, so a missing one means setup failed.
type namespaceInfo struct {
	InitPID int    `json:"child-pid"`
	PidNS   uint64 `json:"pid-namespace"`
}

type exitDocument struct {
	ExitCode *int `json:"exit-code"`
}
