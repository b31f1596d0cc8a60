//go:build linux

package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/resident-dev/resident/protocol"
)

// unifiedKey is cgroupBases' one key on a cgroup v2 machine: where
// sandboxes' cgroups go.
const (
	unifiedKey = "unified"
)

// residentLeaf is the leaf a v2 resident moves itself into: a cgroup that
// hands controllers to its children may hold no process itself.
const residentLeaf = "resident"

// cgroupV2Base readies own (the resident's v2 cgroup directory) for one
// child cgroup per sandbox, which needs it delegated: writable by the
// resident (root, or a subtree systemd delegated, e.g. systemd-run --user
// -p Delegate=yes) and offering the controllers. The resident moves into
// own/resident and enables the controllers for own's children. Any step
// refused, and "" is returned: limits are then recorded, not enforced.
// (A cgroup shared with other processes, such as the host's, refuses the
// last step with EBUSY: run the resident in a scope of its own.)
func cgroupV2Base(own string) string {
	controllers, err := os.ReadFile(filepath.Join(own, "cgroup.controllers"))
	if err != nil || !hasControllers(string(controllers), limitControllers) {
		return ""
	}
	subtree, err := os.ReadFile(filepath.Join(own, "cgroup.subtree_control"))
	if err != nil {
		return ""
	}
	if hasControllers(string(subtree), limitControllers) {
		return own // readied already (by an earlier start, or by the operator)
	}
	leaf := filepath.Join(own, residentLeaf)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return ""
	}
	if os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0) != nil {
		return ""
	}
	if os.WriteFile(filepath.Join(own, "cgroup.subtree_control"), []byte(enableControllers(limitControllers)), 0) != nil {
		return ""
	}
	return own
}

// hasControllers reports whether a cgroup.controllers or
// cgroup.subtree_control line names every controller in want.
func hasControllers(line string, want []string) bool {
	have := strings.Fields(line)
	for _, c := range want {
		if !slices.Contains(have, c) {
			return false
		}
	}
	return true
}

// enableControllers is what cgroup.subtree_control takes to enable them.
func enableControllers(names []string) string {
	out := make([]string, len(names))
	for i, c := range names {
		out[i] = "+" + c
	}
	return strings.Join(out, " ")
}

// cgroupV2Settings are spec's limits as v2 files of the sandbox's one
// cgroup.
func cgroupV2Settings(spec protocol.Spec) [][2]string {
	var out [][2]string
	if spec.PidsLimit > 0 {
		out = append(out, [2]string{"pids.max", strconv.FormatInt(spec.PidsLimit, 10)})
	}
	if spec.MemoryMB > 0 {
		out = append(out, [2]string{"memory.max", strconv.FormatInt(spec.MemoryMB<<20, 10)},
			[2]string{"memory.swap.max", "0"}) // as v1's limit_in_bytes: the limit is of memory, not of swap
	}
	if spec.CPUs > 0 {
		out = append(out, [2]string{"cpu.max", fmt.Sprintf("%d %d", cpuQuota(spec.CPUs), cpuPeriod)})
	}
	return out
}

// startInCgroupV2 forks cmd straight into dir (clone3 CLONE_INTO_CGROUP),
// so it is limited from its first instruction.
func startInCgroupV2(dir string, cmd *exec.Cmd) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	defer f.Close()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = int(f.Fd())
	return cmd.Start()
}
