package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
)

// TestLocalExecCannotKillTheResidentOrEscape drives the real binary on
// local: an exec that kills its parent and leaves a setsid double-forked
// process is stopped by exec/kill and by $/cancelRequest, answers as such,
// leaves nothing running, and the resident lives on. It runs only where
// local isolates (bwrap installed), and fails without running anything
// hostile if an exec can see the resident there.
func TestLocalExecCannotKillTheResidentOrEscape(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap is not installed: local runs execs unisolated, and kill -9 $PPID would kill the resident")
	}
	h := SpawnLive(t, LiveOpts{KeepOut: true})
	h.Init("localkill", nil)
	box := h.Create(map[string]any{})
	residentCmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", h.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	var res protocol.ExecResult
	probe := fmt.Sprintf("cat /proc/%d/cmdline 2>/dev/null || true", h.cmd.Process.Pid)
	h.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "probe", "argv": []string{"sh", "-c", probe}}, &res)
	if bytes.Equal(h.Out("probe", "stdout"), residentCmdline) {
		t.Fatal("bwrap is installed, yet an exec sees the resident: execs are not in pid namespaces of their own")
	}

	hostile := `kill -9 $PPID; setsid sh -c 'cd /; (sleep 2000.5151 &) &'; echo ready; exec sleep 1000`
	for _, how := range []string{"kill", "cancel"} {
		execID := "hostile-" + how
		id := h.Send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": execID, "argv": []string{"sh", "-c", hostile}})
		WaitUntil(t, execID+" to be ready", func() bool { return strings.Contains(string(h.Out(execID, "stdout")), "ready") })
		WaitUntil(t, "the double-forked sleep to run", func() bool { return countCmdline("sleep\x002000.5151\x00") == 1 })
		if how == "kill" {
			h.Call(protocol.MethodExecKill, map[string]any{"exec_id": execID}, nil)
			m := h.Await(id)
			if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || !res.Killed {
				t.Fatalf("killed exec answered %+v %s; want killed: true", m.Error, m.Result)
			}
		} else {
			n, _ := strconv.Atoi(id)
			h.Notify(protocol.MethodCancelRequest, map[string]any{"id": n})
			if m := h.Await(id); m.Kind() != protocol.KindCancelled {
				t.Fatalf("cancelled exec answered %+v %s", m.Error, m.Result)
			}
		}
		WaitUntil(t, "the double-forked sleep to be gone", func() bool { return countCmdline("sleep\x002000.5151\x00") == 0 })
	}
	h.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "after", "argv": []string{"echo", "alive"}}, &res)
	if string(h.Out("after", "stdout")) != "alive\n" {
		t.Fatalf("the resident no longer runs execs: %q", h.Out("after", "stdout"))
	}
	select {
	case <-h.exited:
		t.Fatal("the resident died")
	case <-time.After(0):
	}
}

// countCmdline counts live host processes with exactly this cmdline.
func countCmdline(cmdline string) int {
	n := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if string(data) == cmdline && !bytes.Contains(stat, []byte(") Z ")) {
			n++
		}
	}
	return n
}
