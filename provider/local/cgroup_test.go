//go:build linux

package local

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

func limitedSandbox(t *testing.T, spec protocol.Spec) (*Provider, string) {
	t.Helper()
	if !limitsEnforced() || !bwrapWorks() {
		t.Skip("needs root, cgroup v1 pids/memory/cpu and bwrap: limits are recorded, not enforced here")
	}
	pv, err := New(provider.Config{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p := pv.(*Provider)
	t.Cleanup(func() { _ = p.Close() })
	id, err := p.Create(context.Background(), spec, provider.Owner{Key: "resident-install-id", InstallID: "limits"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = p.Terminate(context.Background(), id) })
	// Nothing hostile runs unless the sandbox's init is proven limited.
	dirs, err := sandboxCgroups(id, spec)
	if err != nil || !inCgroups(initPIDOf(t, p, id), dirs) {
		t.Fatalf("the sandbox's init is not in its cgroups %v (%v): nothing limits it", dirs, err)
	}
	return p, id
}

func bwrapWorks() bool { _, err := exec.LookPath("bwrap"); return err == nil }

func cgroupFile(t *testing.T, controller, id, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cgroupBases()[controller], cgroupName(id), name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// TestForkBombIsContained: a fork bomb in a sandbox with pids_limit hits
// the limit, the machine can still fork, and a kill ends the whole bomb;
// terminate removes the sandbox's cgroups.
func TestForkBombIsContained(t *testing.T) {
	p, id := limitedSandbox(t, protocol.Spec{PidsLimit: 32, CPUs: 0.25})
	if !p.Info().Capabilities.ResourceLimits {
		t.Error("capabilities.resource_limits is false although limits are enforced")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	proc, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"sh", "-c", "b() { b | b & }; b; exec sleep 1000"}})
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, proc.Stdout())
	go io.Copy(io.Discard, proc.Stderr())
	if got := cgroupFile(t, "pids", id, "pids.max"); got != "32" {
		t.Fatalf("pids.max = %s, want 32", got)
	}
	if got := cgroupFile(t, "cpu", id, "cpu.cfs_quota_us"); got != "25000" {
		t.Errorf("cpu.cfs_quota_us = %s, want 25000 (0.25 cpus)", got)
	}
	awaitCond(t, func() bool { return cgroupFile(t, "pids", id, "pids.events") != "max 0" })
	if err := exec.Command("true").Run(); err != nil {
		t.Fatalf("the machine cannot fork while the bomb runs: %v", err)
	}
	cancel()
	// Its main shell may have died first of a fork that failed (exit 2):
	// what matters is that the kill leaves nothing of the bomb.
	if st, _ := proc.Wait(); st.Code == 0 {
		t.Errorf("killed bomb: %+v", st)
	}
	// Only the sandbox's init (the keeper: its threads) is left.
	awaitCond(t, func() bool { return onlyInitIn(t, p, id) })
	if _, err := p.Terminate(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cgroupBases()["pids"], cgroupName(id))); err == nil {
		t.Error("terminate left the sandbox's pids cgroup")
	}
}

// TestExecBeyondPidsLimitIsQuota: once services fill pids_limit, another
// exec is refused as quota, as on Docker, not left to hang or fail vaguely.
func TestExecBeyondPidsLimitIsQuota(t *testing.T) {
	// The keeper's threads count too. The filler forks sleeps until a fork
	// fails, which ends the shell (and frees its slot): each exec that
	// still fits then holds a slot, until one does not.
	p, id := limitedSandbox(t, protocol.Spec{PidsLimit: 24})
	fill, err := p.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"sh", "-c", "i=0; while [ $i -lt 40 ]; do sleep 1000 & i=$((i+1)); done 2>/dev/null"}})
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, fill.Stdout())
	go io.Copy(io.Discard, fill.Stderr())
	if _, err := fill.Wait(); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		hold, err := p.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"sleep", "1000"}})
		if err == nil {
			go io.Copy(io.Discard, hold.Stdout())
			go io.Copy(io.Discard, hold.Stderr())
			continue
		}
		if protocol.KindOf(err) != protocol.KindQuota {
			t.Fatalf("exec in a full sandbox = %v; want quota", err)
		}
		return
	}
	t.Fatal("8 execs fit in a sandbox whose pids_limit was full")
}

// TestTheInitIsInTheSandboxCgroups: inCgroups, the check that refuses an
// init outside its limits, reads /proc/PID/cgroup right.
func TestTheInitIsInTheSandboxCgroups(t *testing.T) {
	bases := cgroupBases()
	if bases == nil {
		t.Skip("no cgroups the resident can use here")
	}
	var own []string
	for _, dir := range bases {
		own = append(own, dir)
	}
	if !inCgroups(os.Getpid(), own) {
		t.Errorf("the resident is not in its own cgroups %v", own)
	}
	if inCgroups(os.Getpid(), []string{filepath.Join(own[0], cgroupName("lcl-0000000000000000"))}) {
		t.Error("the resident read as in a sandbox's cgroup")
	}
}

// TestMemoryLimitKills: a process that outgrows memory_mb is killed.
func TestMemoryLimitKills(t *testing.T) {
	p, id := limitedSandbox(t, protocol.Spec{MemoryMB: 32})
	proc, err := p.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"sh", "-c", "head -c 200000000 /dev/zero | tail > /dev/null"}})
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, proc.Stdout())
	go io.Copy(io.Discard, proc.Stderr())
	st, _ := proc.Wait()
	if st.Code == 0 {
		t.Fatalf("200 MB held in a 32 MB sandbox: %+v", st)
	}
	if !st.OOMKilled {
		t.Errorf("exit %+v: oom_killed not set", st)
	}
	if got := cgroupFile(t, "memory", id, "memory.failcnt"); got == "0" {
		t.Errorf("memory.failcnt = 0: the limit never bound (exit %+v)", st)
	}
}

// onlyInitIn reports whether the sandbox's pids cgroup holds its init's
// threads and nothing else.
func onlyInitIn(t *testing.T, p *Provider, id string) bool {
	t.Helper()
	procs := strings.Fields(cgroupFile(t, "pids", id, "cgroup.procs"))
	return len(procs) == 1 && procs[0] == strconv.Itoa(initPIDOf(t, p, id))
}

func initPIDOf(t *testing.T, p *Provider, id string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(p.sandboxDir(id), initFile))
	if err != nil {
		t.Fatal(err)
	}
	var rec initRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	return rec.PID
}

func awaitCond(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
