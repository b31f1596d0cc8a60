package docker

import (
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
)

// A spec.network the engine does not have is the host's mistake, not a
// passing failure: invalid_request naming the network, and no container
// left. The test engine runs with --bridge=none, so it has no "bridge"
// either; that engine accepted "bridge" and ran the sandbox with no network
// at all.
func TestMissingNetworkIsInvalidRequest(t *testing.T) {
	p, _ := newTestProvider(t)
	owner := testOwner(t)
	names := []string{"resident-missing-" + runID}
	if _, err := p.cli.NetworkInspect(testCtx(t), "bridge", client.NetworkInspectOptions{}); cerrdefs.IsNotFound(err) {
		names = append(names, "bridge")
	} else {
		t.Log(`this engine has a "bridge" network; only the made-up name is tried`)
	}
	for _, name := range names {
		id, err := p.Create(testCtx(t), protocol.Spec{Image: testImage, Network: name}, owner, nil)
		if id != "" {
			_, _ = p.Terminate(testCtx(t), id)
		}
		if protocol.KindOf(err) != protocol.KindInvalidRequest || !strings.Contains(err.Error(), `"`+name+`"`) {
			t.Errorf("network %q: id %q, %v (kind %s); want invalid_request naming it", name, id, err, protocol.KindOf(err))
		}
	}
	list, err := p.cli.ContainerList(testCtx(t), client.ContainerListOptions{All: true, Filters: ownedFilter(owner)})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("containers left behind: %d, %v", len(list.Items), err)
	}
}

// sandbox/create on an engine that hangs at the container's start answers
// transient within the one bound every call has (timing.api), not after
// the start's bound and then a fresh one for the cleanup; the half-made
// container is removed later, in the background, once the engine answers.
func TestHungEngineCreateAnswersWithinTheBound(t *testing.T) {
	px := startProxy(t)
	p, _ := newTestProvider(t, px.host())
	p.timing.api = 12 * time.Second
	direct, _ := newTestProvider(t) // looks past the proxy
	owner := testOwner(t)
	owned := func() int {
		list, err := direct.cli.ContainerList(testCtx(t), client.ContainerListOptions{All: true, Filters: ownedFilter(owner)})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	px.freezeOn(`POST /v[0-9.]+/containers/[0-9a-f]{64}/start`)
	start := time.Now()
	id, err := p.Create(testCtx(t), protocol.Spec{Image: testImage}, owner, nil)
	took := time.Since(start)
	// The bound with room for a loaded machine: the old way, start and
	// cleanup one after the other, took twice the bound.
	if id != "" || protocol.KindOf(err) != protocol.KindTransient || took > p.timing.api*7/4 {
		t.Fatalf("Create on an engine hung at start: %q, %v (kind %s) after %s; want transient within about %s",
			id, err, protocol.KindOf(err), took, p.timing.api)
	}
	t.Logf("hung at start: transient after %s: %v", took.Round(time.Millisecond), err)
	if n := owned(); n != 1 {
		t.Fatalf("%d containers of the owner while the engine hangs; want the half-made one", n)
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
