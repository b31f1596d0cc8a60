package providertest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// markerDelay is how long a hostile test's leftover waits before it writes
// its marker: longer than the kill takes, so a marker proves survival.
const markerDelay = 2 * time.Second

// runHostile: commands that attack their own supervision. Each kill case
// leaves a process that would write a marker file markerDelay later; a
// marker proves it outlived the kill. Everything here is what a host can
// observe, so it holds for every provider.
func runHostile(t *testing.T, h Harness) {
	e := newEnv(t, h)
	probe := e.create(protocol.Spec{}, nil)
	if e.sharesHostPidNamespace(probe) {
		if h.Isolated {
			t.Fatal("an exec sees the test's own process: the provider promises a pid namespace of its own")
		}
		t.Skip("execs share the host's pid namespace: hostile cases skipped (kill -9 $PPID would kill the test)")
	}

	kills := []struct{ name, script string }{
		{"killing_its_parent_then_exec_sleep", `kill -9 $PPID; (sleep 2; echo leaked > marker) & echo ready; exec sleep 1000`},
		{"orphan_left_by_a_subshell_then_killing_its_parent", `(sh -c 'sleep 2; echo leaked > marker' &); kill -9 $PPID; echo ready; sleep 1000`},
		{"setsid_and_double_fork", `setsid sh -c '(sh -c "sleep 2; echo leaked > marker" &) &'; echo ready; exec sleep 1000`},
	}
	for _, k := range kills {
		t.Run("cancel_leaves_nothing_after_"+k.name, func(t *testing.T) {
			id := e.create(protocol.Spec{}, nil)
			c, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := start(t, c, e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "trap '' TERM; " + k.script}})
			await(t, "the hostile command to be ready", func() bool { return strings.Contains(r.stdout.String(), "ready") })
			cancel()
			e.proveNothingSurvived(t, id, r, time.Now())
		})
	}

	t.Run("deadline_leaves_nothing_after_killing_its_parent", func(t *testing.T) {
		id := e.create(protocol.Spec{}, nil)
		c, cancel := context.WithTimeout(context.Background(), markerDelay)
		defer cancel()
		// The marker waits twice the deadline, so even a slow start
		// cannot let it write before the kill.
		r := start(t, c, e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "kill -9 $PPID; (sleep 4; echo leaked > marker) & exec sleep 1000"}})
		e.proveNothingSurvived(t, id, r, time.Now().Add(2*time.Second))
	})

	t.Run("another_execs_processes_survive_a_kill", func(t *testing.T) {
		id := e.create(protocol.Spec{}, nil)
		e.startService(id, "beat-service")
		running := start(t, ctx(t), e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", counterLoop("beat-running")}})
		e.awaitBeating(id, "beat-running")
		c, cancel := context.WithCancel(context.Background())
		r := start(t, c, e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", `setsid sh -c '(sleep 1000 &) &'; kill -9 $PPID; echo ready; exec sleep 1000`}})
		await(t, "the hostile command to be ready", func() bool { return strings.Contains(r.stdout.String(), "ready") })
		cancel()
		r.wait(t)
		e.awaitBeating(id, "beat-service")
		e.awaitBeating(id, "beat-running") // the running exec is alive: its loop still counts
		_ = running
	})

	t.Run("background_service_of_a_normal_exit_keeps_running", func(t *testing.T) {
		id := e.create(protocol.Spec{}, nil)
		e.startService(id, "beat")
		e.awaitBeating(id, "beat")
	})

	t.Run("exclusive_exec_runs_alone", func(t *testing.T) { runExclusive(t, e) })
}

// runExclusive: a service that writes into every stream it can reach and a
// running exec are stopped before an exclusive grader starts; the grader's
// output is its own, and the running exec ends as killed.
func runExclusive(t *testing.T, e *env) {
	id := e.create(protocol.Spec{}, nil)
	forger := `trap '' PIPE; exec >/dev/null 2>&1; i=0; while :; do
  for f in /proc/[0-9]*/fd/1 /proc/[0-9]*/fd/2; do (printf FORGED > "$f") 2>/dev/null; done
  i=$((i+1)); echo $i > beat.tmp; mv beat.tmp beat; sleep 0.05
done`
	if _, errOut, st := e.run(id, provider.ExecRequest{Argv: []string{"sh", "-c", "(" + forger + ") &"}}); st.Code != 0 {
		t.Fatalf("starting the forger: exit %d, %s", st.Code, errOut)
	}
	e.awaitBeating(id, "beat")
	victim := start(t, ctx(t), e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "echo up; exec sleep 1000"}})
	await(t, "the victim exec to start", func() bool { return strings.Contains(victim.stdout.String(), "up") })

	grader := `a=$(cat beat); sleep 1; b=$(cat beat); if [ "$a" = "$b" ]; then echo graded; else echo "beat moved from $a to $b"; fi`
	proc, err := e.p.Exec(ctx(t), id, provider.ExecRequest{Argv: []string{"sh", "-c", grader}, Exclusive: true})
	if err != nil {
		if e.h.Isolated || protocol.KindOf(err) != protocol.KindInvalidRequest {
			t.Fatalf("exclusive exec: %v", err)
		}
		t.Skipf("the provider refuses exclusive execs: %v", err)
	}
	r := &running{proc: proc}
	r.readers.Add(2)
	go func() { defer r.readers.Done(); _, _ = io.Copy(&r.stdout, proc.Stdout()) }()
	go func() { defer r.readers.Done(); _, _ = io.Copy(&r.stderr, proc.Stderr()) }()
	st := r.wait(t)
	if out, errOut := r.stdout.String(), r.stderr.String(); out != "graded\n" || errOut != "" || st.Code != 0 {
		t.Fatalf("exclusive grader: exit %d, stdout %q, stderr %q; want only its own \"graded\"", st.Code, out, errOut)
	}
	if vst := victim.wait(t); !vst.Killed || vst.Code == 0 {
		t.Errorf("the exec running beside an exclusive one ended %+v; want it killed", vst)
	}
	// Contains, not a prefix: the forger may write into the victim's
	// stdout before its echo (docs/protocol.md §4.3: any process of the
	// sandbox can add bytes to a non-exclusive command's output).
	if !strings.Contains(victim.stdout.String(), "up\n") {
		t.Errorf("the killed exec lost its output so far: %q", victim.stdout.String())
	}
}

// proveNothingSurvived waits for the killed exec to end, gives its marker
// writer until after markerDelay from killedAt, then checks that no marker
// was written and that the provider still answers.
func (e *env) proveNothingSurvived(t *testing.T, id string, r *running, killedAt time.Time) {
	t.Helper()
	if st := r.wait(t); st.Code == 0 {
		t.Errorf("killed exec exited 0: %+v", st)
	}
	time.Sleep(time.Until(killedAt.Add(markerDelay + 2*time.Second)))
	if out := e.sh(id, "", "ls"); strings.Contains(out, "marker") {
		t.Fatalf("a process outlived the kill and wrote its marker: %q", out)
	}
}

// counterLoop counts into file for ever, renaming so a reader never sees
// it half written.
func counterLoop(file string) string {
	return fmt.Sprintf(`i=0; while :; do i=$((i+1)); echo $i > %[1]s.tmp; mv %[1]s.tmp %[1]s; sleep 0.05; done`, file)
}

// startService runs an exec that exits at once after starting counterLoop
// in the background, as a command starting a service does.
func (e *env) startService(id, file string) {
	e.t.Helper()
	r := start(e.t, ctx(e.t), e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "(" + counterLoop(file) + ") >/dev/null 2>&1 & echo started"}})
	if st := r.wait(e.t); st.Code != 0 || r.stdout.String() != "started\n" {
		e.t.Fatalf("service start: %+v, stdout %q", st, r.stdout.String())
	}
}

// awaitBeating waits until file's count changes, read by fresh execs: the
// loop writing it is alive.
func (e *env) awaitBeating(id, file string) {
	e.t.Helper()
	read := func() string { return e.sh(id, "", "cat "+file+" 2>/dev/null || true") }
	first := read()
	await(e.t, file+" to keep counting", func() bool { now := read(); return now != "" && now != first })
}

// sharesHostPidNamespace reports whether an exec sees this test process as
// it is: then it could signal the test, and hostile commands must not run.
func (e *env) sharesHostPidNamespace(id string) bool {
	e.t.Helper()
	self, err := os.ReadFile("/proc/self/cmdline")
	if err != nil {
		return false // no /proc here: the sandbox cannot be on this host's pid namespace
	}
	out, _, _ := e.run(id, provider.ExecRequest{Argv: []string{"sh", "-c", fmt.Sprintf("cat /proc/%d/cmdline 2>/dev/null || true", os.Getpid())}})
	return bytes.Equal([]byte(out), self)
}
