package providertest

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// stubbornTree starts, under a shell that ignores SIGTERM, one child shell
// per line below; each (also ignoring TERM, which is inherited) starts a
// long sleep, prints both pids, and two seconds later would write a marker
// file. The setsid one leaves the process group, as a daemonizing child
// does. Nothing here ends by itself within the test's deadlines, so the
// processes being gone proves the kill.
const stubbornTree = `
trap '' TERM
sh -c 'sleep 300 & echo "pid $!"; echo "pid $$"; sleep 2; echo leaked > marker-plain; wait' &
n=1
if command -v setsid >/dev/null 2>&1; then
  setsid sh -c 'sleep 300 & echo "pid $!"; echo "pid $$"; sleep 2; echo leaked > marker-setsid; wait' &
  n=2
fi
echo "pid $$"
ns=$(ls -l /proc/self/ns/pid); echo "pidns ${ns##*pid:}"
echo "children $n"
wait
`

func runKill(t *testing.T, h Harness) {
	e := newEnv(t, h)

	t.Run("cancel_kills_the_whole_tree", func(t *testing.T) {
		id := e.create(protocol.Spec{Workdir: "/work"}, nil)
		c, cancel := context.WithCancel(context.Background())
		defer cancel()
		r := start(t, c, e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", stubbornTree}, Cwd: "/work"})
		var pids []string
		await(t, "every process of the tree to report its pid", func() bool {
			out := r.stdout.String()
			n := 1
			if strings.Contains(out, "children 2") {
				n = 2
			}
			pids = pidsIn(out)
			return strings.Contains(out, "children ") && len(pids) == 1+2*n
		})
		started := time.Now()
		cancel()
		if st := r.wait(t); st.Code == 0 {
			t.Errorf("killed exec exited 0: %+v", st)
		}
		e.awaitDead(t, id, pidNamespaceIn(r.stdout.String()), pids)
		// Give the would-be writers their chance, then prove they had none.
		time.Sleep(time.Until(started.Add(3 * time.Second)))
		if out := e.sh(id, "/work", "ls"); strings.Contains(out, "marker") {
			t.Fatalf("a process outlived the kill and wrote its marker: %q", out)
		}
	})

	t.Run("deadline_kills_a_process_ignoring_term", func(t *testing.T) {
		id := e.create(protocol.Spec{}, nil)
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		r := start(t, c, e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "trap '' TERM; sleep 300"}})
		if st := r.wait(t); st.Code == 0 {
			t.Errorf("exec past its deadline exited 0: %+v", st)
		}
	})

	t.Run("background_child_holding_stdout_does_not_block_wait", func(t *testing.T) {
		id := e.create(protocol.Spec{}, nil)
		r := start(t, ctx(t), e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "sleep 300 & echo done"}})
		st, err, ok := r.waitWithin(awaitTimeout)
		if !ok {
			t.Fatalf("Wait (and the streams) did not end while a background child held stdout")
		}
		if err != nil || st.Code != 0 || r.stdout.String() != "done\n" {
			t.Fatalf("Wait = %+v, %v; stdout %q", st, err, r.stdout.String())
		}
	})

	t.Run("terminate_kills_running_execs", func(t *testing.T) {
		id := e.create(protocol.Spec{}, nil)
		r := start(t, context.Background(), e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "trap '' TERM; echo up; sleep 300"}})
		await(t, "the exec to start", func() bool { return r.stdout.String() == "up\n" })
		if existed, err := e.p.Terminate(ctx(t), id); err != nil || !existed {
			t.Fatalf("Terminate = %v, %v", existed, err)
		}
		if st := r.wait(t); st.Code == 0 {
			t.Errorf("exec in a terminated sandbox exited 0")
		}
	})
}

// awaitDead waits until none of pids is a live process, asking the sandbox
// itself (its /proc), so it works wherever the processes run. A zombie
// counts as dead: it runs no code. Pids mean something only in the pid
// namespace they were read in: an exec that runs in another one (local
// gives each exec its own) cannot check them, and the markers prove the
// kill there instead.
func (e *env) awaitDead(t *testing.T, id, pidns string, pids []string) {
	t.Helper()
	script := `ns=$(ls -l /proc/self/ns/pid); [ "${ns##*pid:}" = "` + pidns + `" ] || exit 0
for p in ` + strings.Join(pids, " ") + `; do
  if [ -r /proc/$p/status ] && ! grep -q zombie /proc/$p/status; then echo "alive $p"; fi
done`
	var alive string
	await(t, "the killed processes to be gone", func() bool {
		alive = e.sh(id, "/", script)
		return alive == ""
	})
}

func pidsIn(out string) []string {
	var pids []string
	for _, l := range lines(out) {
		if p, ok := strings.CutPrefix(l, "pid "); ok {
			pids = append(pids, p)
		}
	}
	return pids
}

func pidNamespaceIn(out string) string {
	for _, l := range lines(out) {
		if ns, ok := strings.CutPrefix(l, "pidns "); ok {
			return ns
		}
	}
	return "unknown"
}

func drain(r io.Reader) { _, _ = io.Copy(io.Discard, r) }
