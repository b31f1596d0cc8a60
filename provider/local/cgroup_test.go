//go:build linux

package local

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	if st, _ := proc.Wait(); st.Signal != "SIGKILL" {
		t.Errorf("killed bomb: %+v", st)
	}
	awaitCond(t, func() bool { return cgroupFile(t, "pids", id, "pids.current") == "0" })
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
	// bwrap, its pid 1, and five sleeps (the last one the shell itself).
	p, id := limitedSandbox(t, protocol.Spec{PidsLimit: 7})
	fill, err := p.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"sh", "-c", "sleep 1000 & sleep 1000 & sleep 1000 & sleep 1000 & exec sleep 1000"}})
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, fill.Stdout())
	go io.Copy(io.Discard, fill.Stderr())
	awaitCond(t, func() bool { return pidsFull([]string{filepath.Join(cgroupBases()["pids"], cgroupName(id))}) })
	_, err = p.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"true"}})
	if protocol.KindOf(err) != protocol.KindQuota {
		t.Fatalf("exec in a full sandbox = %v; want quota", err)
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
