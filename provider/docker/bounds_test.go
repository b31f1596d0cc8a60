package docker

import (
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// testBound is timing.api in these tests: long enough to make an answer
// after one bound and one after two clearly apart, short enough to wait.
const testBound = 12 * time.Second

// hungProvider is a provider behind a proxy that freezes the engine at the
// first request matching pattern, with timing.api = testBound.
func hungProvider(t *testing.T, pattern string) (*Provider, *engineProxy) {
	px := startProxy(t)
	p, _ := newTestProvider(t, px.host())
	p.timing.api = testBound
	px.freezeOn(pattern)
	return p, px
}

// expectWithinBound runs call and checks that it answers transient within
// the bound p announces for one call (initialize's limits.call_timeout_s),
// with room for a loaded machine: doing engine calls one after the other,
// each with a bound of its own, takes twice it.
func expectWithinBound(t *testing.T, p *Provider, what string, call func() error) {
	t.Helper()
	bound := p.Info().CallTimeout
	if bound != testBound {
		t.Fatalf("the provider announces %s, not the bound it applies (%s)", bound, testBound)
	}
	start := time.Now()
	err := call()
	took := time.Since(start)
	if protocol.KindOf(err) != protocol.KindTransient || took > bound*7/4 {
		t.Fatalf("%s on a hung engine: %v (kind %s) after %s; want transient within about %s", what, err, protocol.KindOf(err), took, bound)
	}
	t.Logf("%s on a hung engine: transient after %s: %v", what, took.Round(time.Millisecond), err)
}

// sandbox/create on an engine that hangs at the container's start answers
// within the bound, not after the start's bound and then a fresh one for
// the cleanup; the half-made container is removed later, in the
// background, once the engine answers.
func TestHungEngineCreateAnswersWithinTheBound(t *testing.T) {
	p, px := hungProvider(t, `POST /v[0-9.]+/containers/[0-9a-f]{64}/start`)
	direct, _ := newTestProvider(t) // looks past the proxy
	owner := testOwner(t)
	owned := func() int {
		list, err := direct.cli.ContainerList(testCtx(t), client.ContainerListOptions{All: true, Filters: ownedFilter(owner)})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	expectWithinBound(t, p, "Create", func() error {
		id, err := p.Create(testCtx(t), protocol.Spec{Image: testImage}, owner, nil)
		if id != "" {
			t.Errorf("Create returned a sandbox: %s", id)
		}
		return err
	})
	if n := owned(); n != 1 {
		t.Fatalf("%d containers of the owner while the engine hangs; want the half-made one", n)
	}
	// Never lost: until it is removed, list_owned shows it, stopped, for
	// the host's reclaim.
	list, err := direct.ListOwned(testCtx(t), owner)
	if err != nil || len(list) != 1 || list[0].State != protocol.StateStopped {
		t.Fatalf("list_owned while the half-made container waits for removal: %+v, %v", list, err)
	}
	px.setFrozen(false)
	deadline := time.Now().Add(60 * time.Second)
	for owned() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the half-made container was not removed once the engine answered again")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sandbox/terminate on an engine that hangs at the stop answers within the
// bound (it answered after the stop's bound plus its grace, then a fresh
// bound for the remove). A retry once the engine answers terminates.
func TestHungEngineTerminateAnswersWithinTheBound(t *testing.T) {
	creator, _ := newTestProvider(t)
	id := create(t, creator, testOwner(t), protocol.Spec{}, nil)
	p, px := hungProvider(t, `POST /v[0-9.]+/containers/[0-9a-f]{64}/stop`)
	expectWithinBound(t, p, "Terminate", func() error {
		_, err := p.Terminate(testCtx(t), id)
		return err
	})
	px.setFrozen(false)
	if _, err := p.Terminate(testCtx(t), id); err != nil {
		t.Fatalf("Terminate once the engine answers: %v", err)
	}
}

// sandbox/exec on an engine that hangs at the exec's start answers within
// the bound (it went on to ask for the pids count and the sandbox's state,
// each with a bound of its own).
func TestHungEngineExecStartAnswersWithinTheBound(t *testing.T) {
	creator, _ := newTestProvider(t)
	id := create(t, creator, testOwner(t), protocol.Spec{}, nil)
	p, px := hungProvider(t, `POST /v[0-9.]+/exec/[0-9a-f]{64}/start`)
	expectWithinBound(t, p, "Exec", func() error {
		proc, err := p.Exec(testCtx(t), id, provider.ExecRequest{Argv: []string{"true"}})
		if proc != nil {
			collect(proc)
		}
		return err
	})
	px.setFrozen(false)
	if out := sh(t, p, id, "echo back"); out != "back\n" {
		t.Fatalf("exec once the engine answers: %q", out)
	}
}
