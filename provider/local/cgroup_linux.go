//go:build linux

package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/resident-dev/resident/protocol"
)

// cgroupRoot is where the cgroup v1 hierarchies are mounted, one per
// controller (a variable so that a test can play a machine without them).
var cgroupRoot = "/sys/fs/cgroup"

// limitControllers are the controllers spec's limits need: pids_limit,
// memory_mb and cpus (the same names in v1 and v2).
var limitControllers = []string{"pids", "memory", "cpu"}

// cgroupBases finds where the resident makes one cgroup per sandbox, below
// its own (so whatever limits the resident itself still bind its
// sandboxes): for cgroup v1, the resident's directory in each controller's
// hierarchy; for v2, its delegated directory (cgroupV2Base), under the key
// unifiedKey. Only where every controller the limits need is there and
// writable: otherwise limits are recorded, not enforced, and
// resource_limits says so.
var cgroupBases = sync.OnceValue(func() map[string]string {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	v1, v2, hasV2 := parseProcCgroup(string(data))
	if bases := cgroupV1Bases(v1); bases != nil {
		return bases
	}
	if hasV2 {
		if base := cgroupV2Base(filepath.Join(cgroupRoot, v2)); base != "" {
			return map[string]string{unifiedKey: base}
		}
	}
	return nil
})

// parseProcCgroup reads /proc/self/cgroup ("id:controllers:path" lines):
// the v1 hierarchies by controller, and the v2 path (the "0::" line).
func parseProcCgroup(data string) (v1 map[string]string, v2 string, hasV2 bool) {
	v1 = map[string]string{}
	for _, line := range strings.Split(data, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2, hasV2 = parts[2], true
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			v1[c] = parts[2]
		}
	}
	return v1, v2, hasV2
}

// cgroupV1Bases is the resident's directory in each v1 hierarchy the
// limits need, as root only (a v1 hierarchy is not delegated).
func cgroupV1Bases(own map[string]string) map[string]string {
	if os.Geteuid() != 0 {
		return nil
	}
	bases := map[string]string{}
	for _, c := range limitControllers {
		path, ok := own[c]
		if !ok {
			return nil
		}
		dir := filepath.Join(cgroupRoot, c, path)
		if _, err := os.Stat(filepath.Join(dir, "tasks")); err != nil {
			return nil
		}
		bases[c] = dir
	}
	return bases
}

// limitsEnforced reports whether spec's cpus, memory_mb and pids_limit
// are enforced here.
func limitsEnforced() bool { return cgroupBases() != nil }

// cgroupName is a sandbox's directory name in every controller.
func cgroupName(sandboxID string) string { return "resident-" + sandboxID }

// sandboxCgroups makes (or finds) the sandbox's cgroups with spec's limits
// and returns their directories (v1: one per controller; v2: one): none
// when the spec sets no limit or limits are not enforced here.
func sandboxCgroups(sandboxID string, spec protocol.Spec) ([]string, error) {
	bases := cgroupBases()
	if bases == nil || (spec.PidsLimit == 0 && spec.MemoryMB == 0 && spec.CPUs == 0) {
		return nil, nil
	}
	if base, ok := bases[unifiedKey]; ok {
		dir := filepath.Join(base, cgroupName(sandboxID))
		if err := makeCgroup(dir, cgroupV2Settings(spec)); err != nil {
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		return []string{dir}, nil
	}
	settings := cgroupV1Settings(spec)
	var dirs []string
	for _, c := range limitControllers {
		dir := filepath.Join(bases[c], cgroupName(sandboxID))
		if err := makeCgroup(dir, settings[c]); err != nil {
			return nil, fmt.Errorf("cgroup %s: %w", c, err)
		}
		dirs = append(dirs, dir)
	}
	return dirs, nil
}

// makeCgroup makes dir (or finds it) and writes its settings.
func makeCgroup(dir string, settings [][2]string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	for _, kv := range settings {
		if err := os.WriteFile(filepath.Join(dir, kv[0]), []byte(kv[1]), 0); err != nil {
			return fmt.Errorf("%s: %w", kv[0], err)
		}
	}
	return nil
}

// cpuPeriod is the CFS period the cpus limit is a quota of, in microseconds.
const cpuPeriod = 100000

// cgroupV1Settings are spec's limits as v1 files, by controller.
func cgroupV1Settings(spec protocol.Spec) map[string][][2]string {
	settings := map[string][][2]string{"pids": {}, "memory": {}, "cpu": {}}
	if spec.PidsLimit > 0 {
		settings["pids"] = append(settings["pids"], [2]string{"pids.max", strconv.FormatInt(spec.PidsLimit, 10)})
	}
	if spec.MemoryMB > 0 {
		settings["memory"] = append(settings["memory"], [2]string{"memory.limit_in_bytes", strconv.FormatInt(spec.MemoryMB<<20, 10)})
	}
	if spec.CPUs > 0 {
		settings["cpu"] = append(settings["cpu"],
			[2]string{"cpu.cfs_period_us", strconv.Itoa(cpuPeriod)},
			[2]string{"cpu.cfs_quota_us", strconv.FormatInt(cpuQuota(spec.CPUs), 10)})
	}
	return settings
}

func cpuQuota(cpus float64) int64 { return max(int64(cpus*cpuPeriod), 1000) }

// startInCgroups runs start (an exec.Cmd's Start) on a thread of its own
// moved into dirs first: a v1 cgroup takes a thread, and the forked child
// inherits its cgroups, so the child is limited from its first
// instruction, before it can fork anything out of reach. The thread goes
// back to the resident's cgroups afterwards; if it cannot, it is thrown
// away (still locked when its goroutine ends) rather than reused, which
// ends the exec too (Pdeathsig follows the thread that forked).
//
// On v2 a thread cannot move alone; the child is forked straight into the
// sandbox's cgroup instead (clone3 with CLONE_INTO_CGROUP).
func startInCgroups(dirs []string, cmd *exec.Cmd) error {
	start := cmd.Start
	if len(dirs) == 0 {
		return start()
	}
	if _, v2 := cgroupBases()[unifiedKey]; v2 {
		return startInCgroupV2(dirs[0], cmd)
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		tid := []byte(strconv.Itoa(unix.Gettid()))
		for _, dir := range dirs {
			if err := os.WriteFile(filepath.Join(dir, "tasks"), tid, 0); err != nil {
				moveBack(tid) // the thread may be in some of them
				done <- fmt.Errorf("cgroup %s: %w", dir, err)
				return
			}
		}
		err := start()
		if moveBack(tid) {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

// moveBack returns the thread to the resident's own cgroups.
func moveBack(tid []byte) bool {
	ok := true
	for _, base := range cgroupBases() {
		if err := os.WriteFile(filepath.Join(base, "tasks"), tid, 0); err != nil {
			ok = false
		}
	}
	return ok
}

// movePidBack moves a whole process back to the resident's own cgroups.
func movePidBack(pid int) {
	for key, base := range cgroupBases() {
		if key == unifiedKey {
			base = filepath.Join(base, residentLeaf)
		}
		_ = os.WriteFile(filepath.Join(base, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
	}
}

// removeCgroups removes a terminated sandbox's cgroups once its processes
// are gone: the kernel refuses (EBUSY) while a killed task is still
// exiting, so it waits for that, within evictTimeout.
func removeCgroups(sandboxID string) {
	deadline := time.Now().Add(evictTimeout)
	for _, base := range cgroupBases() {
		dir := filepath.Join(base, cgroupName(sandboxID))
		for {
			err := os.Remove(dir)
			if err == nil || errors.Is(err, fs.ErrNotExist) || !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// oomKills reads how many processes the memory limit of the sandbox whose
// cgroups are dirs has killed so far (oom_kill in v1's memory.oom_control,
// v2's memory.events); -1 when it has none.
func oomKills(dirs []string) int64 {
	for _, dir := range dirs {
		for _, name := range []string{"memory.oom_control", "memory.events"} {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				continue
			}
			if n, ok := parseOOMKill(string(data)); ok {
				return n
			}
		}
	}
	return -1
}

// parseOOMKill finds the "oom_kill N" line of a cgroup's memory file.
func parseOOMKill(data string) (int64, bool) {
	for _, line := range strings.Split(data, "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// pidsFull reports whether the sandbox whose cgroups are dirs has as many
// tasks as its pids_limit allows.
func pidsFull(dirs []string) bool {
	for _, dir := range dirs {
		limit, errL := os.ReadFile(filepath.Join(dir, "pids.max"))
		current, errC := os.ReadFile(filepath.Join(dir, "pids.current"))
		if errL != nil || errC != nil {
			continue
		}
		if strings.TrimSpace(string(limit)) == "max" { // v2: no limit
			return false
		}
		l, errL := strconv.ParseInt(strings.TrimSpace(string(limit)), 10, 64)
		c, errC := strconv.ParseInt(strings.TrimSpace(string(current)), 10, 64)
		return errL == nil && errC == nil && c >= l
	}
	return false
}

// inCgroups reports whether process pid is in every cgroup of dirs, read
// from /proc/PID/cgroup: the proof that a sandbox's init is limited, which
// an init started outside its limits must not go without (a fork bomb in
// it would reach the machine).
func inCgroups(pid int, dirs []string) bool {
	if len(dirs) == 0 {
		return true
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	v1, v2, hasV2 := parseProcCgroup(string(data))
	for _, dir := range dirs {
		rel, err := filepath.Rel(cgroupRoot, dir)
		if err != nil {
			return false
		}
		controller, path, _ := strings.Cut(rel, "/")
		if _, v2mode := cgroupBases()[unifiedKey]; v2mode {
			if !hasV2 || filepath.Join(cgroupRoot, v2) != dir {
				return false
			}
			continue
		}
		if v1[controller] != "/"+path {
			return false
		}
	}
	return true
}
