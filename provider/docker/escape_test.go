package docker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/docker/internal/keeperproto"
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
			proc, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"sh", "-c", script}})
			if err != nil {
				t.Fatal(err)
			}
			awaitRunning(t, p, id, "sleep 100")
			if _, err := p.runKeeper(testCtx(t), id, keeperproto.CmdKill, "-token", proc.(*process).token); err != nil {
				t.Fatal(err)
			}
			return collect(proc)
		},
	}
	for kill, do := range kills {
		for name, script := range escapes {
			t.Run(kill+"/"+name, func(t *testing.T) {
				id := create(t, p, testOwner(t), protocol.Spec{}, nil)
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

// keeperProbe runs, from inside the sandbox, every attack a process has on
// the keepers: for each keeper (and pid 1, docker-init), a look at its
// descriptors, a write into its stdout, a read of its stdin and its memory,
// a kill -9. It prints one line per success. (Listing /proc/PID/fd is
// allowed, as for any non-dumpable process: it shows the numbers only.)
// A kill of pid 1 from inside its namespace returns 0 and does nothing.
const keeperProbe = `for d in /proc/[0-9]*; do
  pid=${d#/proc/}
  [ "$pid" = "$$" ] && continue
  case "$(tr '\0' ' ' < $d/cmdline 2>/dev/null)" in
  /.resident/keeper*|/sbin/docker-init*) ;;
  *) continue ;;
  esac
  readlink $d/fd/0 >/dev/null 2>&1 && echo "readlink $pid"
  ( printf X > $d/fd/1 ) 2>/dev/null && echo "wrote $pid"
  ( timeout 1 cat $d/fd/0 >/dev/null ) 2>/dev/null && echo "read $pid"
  head -c1 $d/mem >/dev/null 2>&1 && echo "mem $pid"
  [ "$pid" != 1 ] && kill -9 $pid 2>/dev/null && echo "killed $pid"
done
echo probed`

// docker-init (pid 1) forwards the signals it gets to the keeper's "alive",
// and any root process may signal pid 1: none of them stops the sandbox.
func TestSignalsToPid1DoNotStopTheSandbox(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	sh(t, p, id, "for s in HUP INT QUIT USR1 USR2 TERM ALRM TSTP TTIN TTOU PIPE; do kill -$s 1; done")
	// Forwarding is asynchronous: a stop would show within a few execs.
	for range 10 {
		r := run(t, testCtx(t), p, id, provider.ExecRequest{Argv: []string{"echo", "alive"}})
		if r.err != nil || r.stdout != "alive\n" {
			t.Fatalf("the sandbox after signals to pid 1: %+v %v", r.status, r.err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSandboxProcessesCannotReachTheKeepers(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	// A second exec is running (its keeper is one of the targets) and must
	// end with its own output and status.
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	other, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"sh", "-c", "read line; echo got $line; exit 3"}, Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, testCtx(t), p, id, provider.ExecRequest{Argv: []string{"sh", "-c", keeperProbe}})
	if r.err != nil || r.status.Code != 0 || r.stdout != "probed\n" {
		t.Errorf("a sandbox process reached a keeper: %+v %v\n%s", r.status, r.err, r.stdout)
	}
	if _, err := other.Stdin().Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	o := collect(other)
	if o.err != nil || o.status.Code != 3 || o.stdout != "got hello\n" {
		t.Fatalf("the other exec after the probe: %+v %v, stdout %q", o.status, o.err, o.stdout)
	}
	if out := sh(t, p, id, "echo alive"); out != "alive\n" {
		t.Fatalf("the sandbox after the probe: %q", out)
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

// writerLoop is what an agent can leave behind: a background loop writing
// into every descriptor 1 and 2 it can open in the sandbox, the keepers'
// and the other commands' alike.
const writerLoop = `(while :; do for f in /proc/[0-9]*/fd/1 /proc/[0-9]*/fd/2; do printf X > $f; done 2>/dev/null; done) </dev/null >/dev/null 2>&1 &
echo started`

func TestAWriterIntoEveryStreamCannotHangOrForgeAnExec(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	sh(t, p, id, writerLoop) // its own output has the loop's bytes too
	// Another exec answers, with its own status; its own stdout is open to
	// the writer (same root), so only an exclusive exec's output is exact.
	for i := range 5 {
		r := run(t, testCtx(t), p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "echo grade; exit 7"}})
		if r.err != nil || r.status.Code != 7 || !strings.Contains(r.stdout, "grade\n") {
			t.Fatalf("exec %d next to the writer: %+v %v, stdout %q", i, r.status, r.err, r.stdout)
		}
		t.Logf("exec %d next to the writer: stdout %q", i, r.stdout)
	}
}

func TestAnExclusiveExecAnswersWithItsOwnOutputOnly(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	sh(t, p, id, writerLoop) // its own output has the loop's bytes too
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	running, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"sh", "-c", "sleep 1012; echo never"}})
	if err != nil {
		t.Fatal(err)
	}
	// Long enough for the writer, were it alive, to reach this exec's
	// streams many times over.
	r := run(t, testCtx(t), p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "sleep 1; echo graded; echo fine >&2; exit 5"}, Exclusive: true})
	if r.err != nil || r.status.Code != 5 || r.stdout != "graded\n" || r.stderr != "fine\n" {
		t.Fatalf("exclusive exec next to the writer: %+v %v, stdout %q, stderr %q", r.status, r.err, r.stdout, r.stderr)
	}
	if o := collect(running); o.status.Code != keeperproto.KilledExitCode {
		t.Errorf("the exec running beside the exclusive one: %+v %v", o.status, o.err)
	}
	if left := sh(t, p, id, `cat /proc/[0-9]*/cmdline | tr '\0' ' '`); strings.Contains(left, "sleep 1012") || strings.Contains(left, "sleep 1014") || strings.Contains(left, "while") {
		t.Errorf("processes of other execs survive an exclusive exec: %q", left)
	}
	// The sandbox goes on working, and an exec after it is not exclusive.
	if out := sh(t, p, id, "echo after"); out != "after\n" {
		t.Fatalf("after the exclusive exec: %q", out)
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
