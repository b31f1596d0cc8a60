package providertest

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/resident-dev/resident/provider"
)

// running is an exec whose streams are being read concurrently, as the
// resident reads them.
type running struct {
	proc    provider.Process
	stdout  buffer
	stderr  buffer
	readers sync.WaitGroup
}

func start(t *testing.T, c context.Context, p provider.Provider, id string, req provider.ExecRequest) *running {
	t.Helper()
	proc, err := p.Exec(c, id, req)
	if err != nil {
		t.Fatalf("Exec(%q): %v", req.Argv, err)
	}
	r := &running{proc: proc}
	r.readers.Add(2)
	go func() { defer r.readers.Done(); _, _ = io.Copy(&r.stdout, proc.Stdout()) }()
	go func() { defer r.readers.Done(); _, _ = io.Copy(&r.stderr, proc.Stderr()) }()
	return r
}

// wait returns the exit status once Wait returned and both streams ended.
func (r *running) wait(t *testing.T) provider.ExitStatus {
	t.Helper()
	st, err, ok := r.waitWithin(awaitTimeout)
	if !ok {
		t.Fatalf("%v within %s (stdout so far %q)", errWaitStuck, awaitTimeout, r.stdout.String())
	}
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return st
}

func (r *running) waitWithin(d time.Duration) (provider.ExitStatus, error, bool) {
	type result struct {
		st  provider.ExitStatus
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := r.proc.Wait()
		r.readers.Wait()
		done <- result{st, err}
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case res := <-done:
		return res.st, res.err, true
	case <-timer.C:
		return provider.ExitStatus{}, nil, false
	}
}

// run execs argv to completion and returns stdout, stderr and the status.
func (e *env) run(id string, req provider.ExecRequest) (string, string, provider.ExitStatus) {
	e.t.Helper()
	return runIn(e.t, e.p, id, req)
}

func runIn(t *testing.T, p provider.Provider, id string, req provider.ExecRequest) (string, string, provider.ExitStatus) {
	t.Helper()
	r := start(t, ctx(t), p, id, req)
	st := r.wait(t)
	return r.stdout.String(), r.stderr.String(), st
}

// sh runs a shell script (argv sh -c script) in cwd and fails the test
// unless it exits 0; it returns stdout.
func (e *env) sh(id, cwd, script string) string {
	e.t.Helper()
	out, errOut, st := e.run(id, provider.ExecRequest{Argv: []string{"sh", "-c", script}, Cwd: cwd})
	if st.Code != 0 {
		e.t.Fatalf("sh -c %q: exit %d, stderr %q", script, st.Code, errOut)
	}
	return out
}
