package docker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Commands that try to leave their exec's tree behind by killing their
// supervisor (the keeper), each with sleeps whose numbers name them. None of
// them ends by itself within the test.
var escapes = map[string]string{
	"kill_parent_then_exec":   `kill -9 $PPID; exec sleep 1001`,
	"orphan_then_kill_parent": `(sleep 1002 &); kill -9 $PPID; sleep 1003`,
	"setsid_double_fork":      `setsid sh -c '(sleep 1004 &); sleep 1005' & (setsid sleep 1006 &); kill -9 $PPID; sleep 1007`,
}

// leftovers lists the command lines of the sandbox's processes that run one
// of the escapes' sleeps, from a second exec reading /proc.
func escapedSleeps(t *testing.T, p *Provider, id string) string {
	t.Helper()
	out := sh(t, p, id, `for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < $f 2>/dev/null; echo; done`)
	var found []string
	for line := range strings.Lines(out) {
		if strings.Contains(line, "sleep 10") {
			found = append(found, strings.TrimSpace(line))
		}
	}
	return strings.Join(found, "; ")
}

// awaitRunning waits until the sandbox runs a process whose command line
// contains want.
func awaitRunning(t *testing.T, p *Provider, id, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(sh(t, p, id, `cat /proc/[0-9]*/cmdline | tr '\0' ' '`), want) {
		if time.Now().After(deadline) {
			t.Fatalf("%q never started", want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestKillOfAnExecThatKillsItsKeeperLeavesNothing(t *testing.T) {
	p, _ := newTestProvider(t)
	// "keeper kill" is the exec path's own fallback: its sandboxes only.
	execPath := newExecModeProvider(t)
	kills := map[string]func(t *testing.T, id, script string) result{
		"timeout": func(t *testing.T, id, script string) result {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			return run(t, ctx, p, id, provider.ExecRequest{Argv: []string{"sh", "-c", script}})
		},
		"cancel": func(t *testing.T, id, script string) result {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			proc, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"sh", "-c", script}})
			if err != nil {
				t.Fatal(err)
			}
			awaitRunning(t, p, id, "sleep 100")
			cancel()
			return collect(proc)
		},
		"keeper_kill": func(t *testing.T, id, script string) result {
			// The fallback path alone: a second exec running "keeper kill".
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			proc, err := execPath.Exec(ctx, id, provider.ExecRequest{Argv: []string{"sh", "-c", script}})
			if err != nil {
				t.Fatal(err)
			}
			awaitRunning(t, p, id, "sleep 100")
			if _, err := execPath.runKeeper(testCtx(t), id, keeperproto.CmdKill, "-token", proc.(*process).token); err != nil {
				t.Fatal(err)
			}
			return collect(proc)
		},
	}
	for kill, do := range kills {
		for name, script := range escapes {
			t.Run(kill+"/"+name, func(t *testing.T) {
				maker := p
				if kill == "keeper_kill" {
					maker = execPath
				}
				id := create(t, maker, testOwner(t), protocol.Spec{}, nil)
				r := do(t, id, script)
				if r.err != nil || r.status.Code != keeperproto.KilledExitCode {
					t.Errorf("killed exec: %+v %v, stderr %q", r.status, r.err, r.stderr)
				}
				if left := escapedSleeps(t, p, id); left != "" {
					t.Fatalf("processes of the killed exec survive: %s", left)
				}
			})
		}
	}
}

// An exec that ends by itself after trying to kill its keeper ends with its
// own status, not the keeper's death; what it started in the background
// keeps running, as any exec's background processes do.
func TestAnExecCannotKillItsKeeper(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	r := run(t, testCtx(t), p, id, provider.ExecRequest{Argv: []string{"sh", "-c", `(sleep 1008 &); kill -9 $PPID; echo "kill $?"`}})
	if r.err != nil || r.status.Code != 0 || r.stdout != "kill 1\n" {
		t.Fatalf("exec that tried to kill its keeper: %+v %v, stdout %q", r.status, r.err, r.stdout)
	}
	if left := escapedSleeps(t, p, id); !strings.Contains(left, "sleep 1008") {
		t.Fatalf("the background process of an exec that exited normally is gone: %q", left)
	}
}

// A kill of one exec never reaches another's processes.
func TestAKillLeavesOtherExecsAlone(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	bystander, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"sh", "-c", "sleep 1009 & sleep 1010; echo done"}})
	if err != nil {
		t.Fatal(err)
	}
	sh(t, p, id, "sleep 1011 > /dev/null 2>&1 &") // a service left by an exec that ended
	tctx, tcancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer tcancel()
	r := run(t, tctx, p, id, provider.ExecRequest{Argv: []string{"sh", "-c", escapes["setsid_double_fork"]}})
	if r.status.Code != keeperproto.KilledExitCode {
		t.Errorf("killed exec: %+v %v", r.status, r.err)
	}
	left := escapedSleeps(t, p, id)
	for _, want := range []string{"sleep 1009", "sleep 1010", "sleep 1011"} {
		if !strings.Contains(left, want) {
			t.Errorf("%s (another exec's) was killed: %q", want, left)
		}
	}
	for _, gone := range []string{"sleep 1004", "sleep 1005", "sleep 1006", "sleep 1007"} {
		if strings.Contains(left, gone) {
			t.Errorf("%s (the killed exec's) survives: %q", gone, left)
		}
	}
	cancel()
	if b := collect(bystander); b.status.Code != keeperproto.KilledExitCode {
		t.Errorf("bystander: %+v %v", b.status, b.err)
	}
}

// The keeper gives up root before the command starts, but the command does
// not: a work directory and an executable only root may reach still work.
func TestTheCommandKeepsTheRightsOfTheSandboxUser(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	sh(t, p, id, "mkdir -m 700 /private && cp /bin/busybox /private/sh && chmod 700 /private/sh")
	r := run(t, testCtx(t), p, id, provider.ExecRequest{Argv: []string{"/private/sh", "-c", "id -u; pwd; grep -E '^Cap(Eff|Bnd)' /proc/self/status"}, Cwd: "/private"})
	want := "0\n/private\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\n"
	if r.err != nil || r.status.Code != 0 || r.stdout != want {
		t.Fatalf("exec in a root-only directory: %+v %v, stdout %q, stderr %q", r.status, r.err, r.stdout, r.stderr)
	}
}
