//go:build linux

package local

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
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

// limitControllers are the v1 controllers spec's limits need: pids_limit,
// memory_mb and cpus.
var limitControllers = []string{"pids", "memory", "cpu"}

// cgroupBases finds, for each controller, the resident's own cgroup
// directory, below which it makes one per sandbox (so whatever limits the
// resident itself still bind its sandboxes). Only as root, and only where
// every controller is a v1 hierarchy the resident can write: otherwise
// limits are recorded, not enforced, and resource_limits says so.
var cgroupBases = sync.OnceValue(func() map[string]string {
	if os.Geteuid() != 0 {
		return nil
	}
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	defer f.Close()
	own := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3) // id:controllers:path
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = parts[2]
		}
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
})

// limitsEnforced reports whether spec's cpus, memory_mb and pids_limit
// are enforced here.
func limitsEnforced() bool { return cgroupBases() != nil }

// cgroupName is a sandbox's directory name in every controller.
func cgroupName(sandboxID string) string { return "resident-" + sandboxID }

// sandboxCgroups makes (or finds) the sandbox's cgroups with spec's limits
// and returns their directories: none when the spec sets no limit or
// limits are not enforced here.
func sandboxCgroups(sandboxID string, spec protocol.Spec) ([]string, error) {
	bases := cgroupBases()
	if bases == nil || (spec.PidsLimit == 0 && spec.MemoryMB == 0 && spec.CPUs == 0) {
		return nil, nil
	}
	settings := map[string][][2]string{
		"pids":   {},
		"memory": {},
		"cpu":    {},
	}
	if spec.PidsLimit > 0 {
		settings["pids"] = append(settings["pids"], [2]string{"pids.max", strconv.FormatInt(spec.PidsLimit, 10)})
	}
	if spec.MemoryMB > 0 {
		settings["memory"] = append(settings["memory"], [2]string{"memory.limit_in_bytes", strconv.FormatInt(spec.MemoryMB<<20, 10)})
	}
	if spec.CPUs > 0 {
		const period = 100000 // microseconds
		settings["cpu"] = append(settings["cpu"],
			[2]string{"cpu.cfs_period_us", strconv.Itoa(period)},
			[2]string{"cpu.cfs_quota_us", strconv.FormatInt(max(int64(spec.CPUs*period), 1000), 10)})
	}
	var dirs []string
	for _, c := range limitControllers {
		dir := filepath.Join(bases[c], cgroupName(sandboxID))
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("cgroup %s: %w", c, err)
		}
		for _, kv := range settings[c] {
			if err := os.WriteFile(filepath.Join(dir, kv[0]), []byte(kv[1]), 0); err != nil {
				return nil, fmt.Errorf("cgroup %s: %s: %w", c, kv[0], err)
			}
		}
		dirs = append(dirs, dir)
	}
	return dirs, nil
}

// startInCgroups runs start (an exec.Cmd's Start) on a thread of its own
// moved into dirs first: a v1 cgroup takes a thread, and the forked child
// inherits its cgroups, so the child is limited from its first
// instruction, before it can fork anything out of reach. The thread goes
// back to the resident's cgroups afterwards; if it cannot, it is thrown
// away (still locked when its goroutine ends) rather than reused, which
// ends the exec too (Pdeathsig follows the thread that forked).
func startInCgroups(dirs []string, start func() error) error {
	if len(dirs) == 0 {
		return start()
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
// cgroups are dirs has killed so far (memory.oom_control's oom_kill); -1
// when it has none.
func oomKills(dirs []string) int64 {
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, "memory.oom_control"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err == nil {
					return n
				}
			}
		}
	}
	return -1
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
		l, errL := strconv.ParseInt(strings.TrimSpace(string(limit)), 10, 64)
		c, errC := strconv.ParseInt(strings.TrimSpace(string(current)), 10, 64)
		return errL == nil && errC == nil && c >= l
	}
	return false
}
