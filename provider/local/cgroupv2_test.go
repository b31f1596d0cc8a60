//go:build linux

package local

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/resident-dev/resident/protocol"
)

// This machine has cgroup v1; these run the v2 paths on a directory laid
// out as a delegated v2 cgroup is, and on the files' real formats.

func TestParseProcCgroupFindsBothVersions(t *testing.T) {
	v1, v2, hasV2 := parseProcCgroup("12:pids:/user.slice\n4:memory,cpu:/a/b\n0::/user.slice/user-1000.slice/app.scope\n")
	if v1["pids"] != "/user.slice" || v1["memory"] != "/a/b" || v1["cpu"] != "/a/b" {
		t.Errorf("v1 = %v", v1)
	}
	if !hasV2 || v2 != "/user.slice/user-1000.slice/app.scope" {
		t.Errorf("v2 = %q, %v", v2, hasV2)
	}
	if _, _, hasV2 := parseProcCgroup("4:memory:/x\n"); hasV2 {
		t.Error("a v1-only machine read as v2")
	}
}

func fakeV2Cgroup(t *testing.T, controllers, subtree string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{"cgroup.controllers": controllers, "cgroup.subtree_control": subtree, "cgroup.procs": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCgroupV2BaseMovesIntoALeafAndEnablesControllers(t *testing.T) {
	own := fakeV2Cgroup(t, "cpuset cpu io memory hugetlb pids\n", "\n")
	if got := cgroupV2Base(own); got != own {
		t.Fatalf("base = %q, want %q", got, own)
	}
	procs, _ := os.ReadFile(filepath.Join(own, residentLeaf, "cgroup.procs"))
	if string(procs) != strconv.Itoa(os.Getpid()) {
		t.Errorf("the resident did not move into its leaf: %q", procs)
	}
	subtree, _ := os.ReadFile(filepath.Join(own, "cgroup.subtree_control"))
	if string(subtree) != "+pids +memory +cpu" {
		t.Errorf("subtree_control = %q", subtree)
	}
}

func TestCgroupV2BaseRefusesWhatIsNotDelegated(t *testing.T) {
	if got := cgroupV2Base(fakeV2Cgroup(t, "cpu memory\n", "")); got != "" {
		t.Errorf("no pids controller, yet base %q", got)
	}
	if got := cgroupV2Base(filepath.Join(t.TempDir(), "missing")); got != "" {
		t.Errorf("no cgroup, yet base %q", got)
	}
	ready := fakeV2Cgroup(t, "cpu memory pids", "cpu memory pids")
	if got := cgroupV2Base(ready); got != ready {
		t.Errorf("a readied cgroup is refused: %q", got)
	}
	if _, err := os.Stat(filepath.Join(ready, residentLeaf)); err == nil {
		t.Error("a readied cgroup got a leaf it does not need")
	}
}

func TestCgroupV2Settings(t *testing.T) {
	got := map[string]string{}
	for _, kv := range cgroupV2Settings(protocol.Spec{PidsLimit: 64, MemoryMB: 256, CPUs: 0.5}) {
		got[kv[0]] = kv[1]
	}
	want := map[string]string{"pids.max": "64", "memory.max": "268435456", "memory.swap.max": "0", "cpu.max": "50000 100000"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(cgroupV2Settings(protocol.Spec{})) != 0 {
		t.Error("settings for a spec without limits")
	}
}

func TestCgroupCountersReadBothFormats(t *testing.T) {
	dir := t.TempDir()
	must := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must("memory.events", "low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\noom_group_kill 0\n")
	if n := oomKills([]string{dir}); n != 2 {
		t.Errorf("v2 oom_kill = %d, want 2", n)
	}
	must("pids.max", "max\n")
	must("pids.current", "5\n")
	if pidsFull([]string{dir}) {
		t.Error(`pids.max "max" read as full`)
	}
	must("pids.max", "5\n")
	if !pidsFull([]string{dir}) {
		t.Error("5 of 5 pids not read as full")
	}
}
