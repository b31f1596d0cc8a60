package docker

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Execs held open in a sandbox with a small pids limit: the first that
// does not fit is refused as quota, naming pids_limit, instead of the
// runtime's "read init-p: connection reset by peer". Every exec that did
// start is still the keeper's: none died later unable to make a thread
// (exit 2, its child orphaned), so the kill ends each with SIGKILL and
// nothing is left running.
func TestExecBeyondThePidsLimitIsQuota(t *testing.T) {
	t.Run("exec_path", func(t *testing.T) { testExecBeyondThePidsLimit(t, newExecModeProvider(t)) })
	t.Run("channel", func(t *testing.T) {
		p, _ := newTestProvider(t)
		// The serving keeper must have made every thread it needs at
		// start, or the first thread it lacks at the limit kills it, and
		// the sandbox with it (w4-keeper's serveThreads: 15 threads in a
		// Docker sandbox, 8 before).
		id := create(t, p, testOwner(t), protocol.Spec{}, nil)
		if threads, _ := strconv.Atoi(sh(t, p, id, "grep '^Threads:' /proc/1/status | tr -dc 0-9")); threads < 11 {
			t.Skipf("this build's keeper serve has %d threads at start: it does not make them all at start yet (the keeper fix of w4-keeper)", threads)
		}
		testExecBeyondThePidsLimit(t, p)
	})
}

func testExecBeyondThePidsLimit(t *testing.T, p *Provider) {
	needEngine(t)
	id := create(t, p, testOwner(t), protocol.Spec{PidsLimit: 48}, nil)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	var wg sync.WaitGroup
	// An exec over the channel holds one pid (its command), not ~9.
	const tries = 100
	results := make(chan result, tries)
	var refused error
	for range tries {
		proc, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"sleep", "300"}})
		if err != nil {
			refused = err
			break
		}
		wg.Go(func() { results <- collect(proc) })
	}
	if refused == nil {
		t.Fatalf("%d held-open execs all started under pids_limit 48", tries)
	}
	t.Logf("refused: %v", refused)
	if protocol.KindOf(refused) != protocol.KindQuota || !strings.Contains(refused.Error(), "pids_limit 48") {
		t.Fatalf("the exec that did not fit: %v (kind %s); want quota naming pids_limit 48", refused, protocol.KindOf(refused))
	}
	cancel()
	wg.Wait()
	close(results)
	n := 0
	for r := range results {
		n++
		// An exec whose fork lost the last pid to the next exec's keeper
		// (after its "ok") ends 126 saying so; nothing of it runs.
		lostTheFork := r.err == nil && r.status.Code == 126 && strings.Contains(r.stderr, "at its pids limit")
		if !lostTheFork && (r.err != nil || r.status.Signal != "SIGKILL") {
			t.Errorf("an exec that started ended %+v %v; stderr %q", r.status, r.err, r.stderr)
		}
	}
	if n == 0 {
		t.Fatal("not one exec started under pids_limit 48")
	}
	if ps := processes(t, p, id); strings.Contains(ps, "sleep") {
		t.Fatalf("processes of the execs survive:\n%s", ps)
	}
}
