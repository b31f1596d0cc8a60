package docker

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// engineHas says whether the engine still holds a container, by any name.
func engineHas(t *testing.T, p *Provider, id string) bool {
	t.Helper()
	_, err := p.cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil && !cerrdefs.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// sandboxProcesses lists the live processes (zombies not counted) of a
// container the engine still holds: nothing once it stopped. A sandbox
// its keeper ended may still be running to the engine for a moment (it
// records the exit behind terminate's answer) with no process left.
func sandboxProcesses(t *testing.T, p *Provider, id string) [][]string {
	t.Helper()
	top, err := p.cli.ContainerTop(context.Background(), id, client.ContainerTopOptions{Arguments: []string{"-o", "pid,stat,args"}})
	if err != nil {
		return nil // not running, or gone
	}
	var live [][]string
	for _, proc := range top.Processes {
		if len(proc) > 1 && !strings.HasPrefix(proc[1], "Z") {
			live = append(live, proc)
		}
	}
	return live
}

// A channel-mode sandbox whose channel the provider holds is ended by its
// keeper (FeatureShutdown): terminate answers once no process of it is
// left, a running exec's and one left in the background alike, without
// the engine's stop; the exec ends killed, and the removal follows behind.
func TestTerminateByTheKeeper(t *testing.T) {
	p, _ := newTestProvider(t)
	core, logs := observer.New(zap.DebugLevel)
	p.log = zap.New(core)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	sh(t, p, id, "sleep 1000 >/dev/null 2>&1 &")
	proc, err := p.Exec(testCtx(t), id, provider.ExecRequest{Argv: []string{"sh", "-c", "echo up; exec sleep 1000"}})
	if err != nil {
		t.Fatal(err)
	}
	up := make([]byte, 3)
	if _, err := io.ReadFull(proc.Stdout(), up); err != nil || string(up) != "up\n" {
		t.Fatalf("exec output %q, %v", up, err)
	}
	if existed, err := p.Terminate(testCtx(t), id); !existed || err != nil {
		t.Fatalf("Terminate = %v, %v", existed, err)
	}
	if left := sandboxProcesses(t, p, id); len(left) > 0 {
		t.Fatalf("processes left after terminate answered: %v", left)
	}
	if logs.FilterMessage("sandbox ended by its keeper").Len() != 1 {
		t.Fatalf("terminate did not go through the keeper: %v", logs.All())
	}
	if st, err := proc.Wait(); err == nil && st.Code == 0 {
		t.Fatalf("the running exec ended %+v after terminate", st)
	}
	awaitRemoved(t, p, id)
}

// awaitRemoved waits, untimed (the test's own deadline bounds it), for
// the engine to have removed a container.
func awaitRemoved(t *testing.T, p *Provider, id string) {
	t.Helper()
	for engineHas(t, p, id) {
		if testCtx(t).Err() != nil {
			t.Fatalf("container %s never removed", id[:12])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A terminate without store volumes answers once the sandbox is killed
// and gone to the host; the engine's removal finishes behind it. Between
// the two nothing tells the sandbox from a removed one: read_owner, exec
// and list_owned say not found, a second terminate says it did not exist.
// Of two racing terminates exactly one ended it.
func TestTerminateAnswersOnceGoneAndRemovesBehind(t *testing.T) {
	p, _ := newTestProvider(t)
	owner := testOwner(t)
	for round := range 3 {
		id := create(t, p, owner, protocol.Spec{}, map[string]string{"job": "gone"})
		existed := make([]bool, 2)
		var wg sync.WaitGroup
		for i := range existed {
			wg.Go(func() {
				var err error
				if existed[i], err = p.Terminate(testCtx(t), id); err != nil {
					t.Errorf("Terminate: %v", err)
				}
			})
		}
		wg.Wait()
		if existed[0] == existed[1] {
			t.Fatalf("round %d: existed = %v; want exactly one", round, existed)
		}
		if left := sandboxProcesses(t, p, id); len(left) > 0 {
			t.Fatalf("round %d: the sandbox still runs after terminate answered: %v", round, left)
		}
		if _, err := p.ReadOwner(testCtx(t), id, owner.Key); protocol.KindOf(err) != protocol.KindNotFound {
			t.Fatalf("round %d: ReadOwner after terminate = %v, want not_found", round, err)
		}
		if owned, _ := p.ListOwned(testCtx(t), owner); slices.ContainsFunc(owned, func(b protocol.Sandbox) bool { return b.SandboxID == id }) {
			t.Fatalf("round %d: list_owned shows a terminated sandbox: %+v", round, owned)
		}
		if proc, err := p.Exec(testCtx(t), id, provider.ExecRequest{Argv: []string{"true"}}); protocol.KindOf(err) != protocol.KindNotFound {
			if proc != nil {
				collect(proc)
			}
			t.Fatalf("round %d: exec after terminate = %v, want not_found", round, err)
		}
		if again, err := p.Terminate(testCtx(t), id); again || err != nil {
			t.Fatalf("round %d: a second terminate = %v, %v", round, again, err)
		}
		awaitRemoved(t, p, id)
	}
}

// A resident killed between terminate's answer and the removal leaves a
// gone sandbox: any later resident's start sweep removes it, and leaves a
// stopped sandbox a host still holds.
func TestSweepRemovesGoneSandboxes(t *testing.T) {
	p, _ := newTestProvider(t)
	owner := testOwner(t)
	gone := create(t, p, owner, protocol.Spec{}, nil)
	stopped := create(t, p, owner, protocol.Spec{}, nil)
	for _, id := range []string{gone, stopped} {
		if _, err := p.cli.ContainerKill(testCtx(t), id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.cli.ContainerRename(testCtx(t), gone, client.ContainerRenameOptions{NewName: goneName(gone)}); err != nil {
		t.Fatal(err)
	}
	later, _ := newTestProvider(t)
	if err := later.sweepGone(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if engineHas(t, p, gone) {
		t.Fatal("the sweep left a gone sandbox")
	}
	owned, _ := later.ListOwned(testCtx(t), owner)
	if len(owned) != 1 || owned[0].SandboxID != stopped || owned[0].State != protocol.StateStopped {
		t.Fatalf("the sweep touched a stopped sandbox a host holds: %+v", owned)
	}
}

// A paused sandbox's keeper cannot answer: terminate leaves it to the
// engine, which kills it paused as it is, and never waits on the keeper.
func TestTerminateAPausedSandbox(t *testing.T) {
	p, _ := newTestProvider(t)
	core, logs := observer.New(zap.DebugLevel)
	p.log = zap.New(core)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	if _, err := p.cli.ContainerPause(testCtx(t), id, client.ContainerPauseOptions{}); err != nil {
		t.Skipf("this engine cannot pause a container: %v", err)
	}
	if existed, err := p.Terminate(testCtx(t), id); !existed || err != nil {
		t.Fatalf("Terminate = %v, %v", existed, err)
	}
	if logs.FilterMessage("sandbox ended by its keeper").Len() != 0 || logs.FilterMessageSnippet("did not end it").Len() != 0 {
		t.Fatalf("a paused sandbox's keeper was asked to end it: %v", logs.All())
	}
	awaitRemoved(t, p, id)
}
