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
	// docker-init takes them (and forwards); the keeper as pid 1 runs as
	// its own uid, so they are refused outright.
	sh(t, p, id, "for s in HUP INT QUIT USR1 USR2 TERM ALRM TSTP TTIN TTOU PIPE; do kill -$s 1 2>/dev/null; done; true")
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
