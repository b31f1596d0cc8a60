package docker

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
)

// The per-op reads go by quickGet on a unix-socket engine and decode what
// the SDK decodes; a missing container is its 404; the connection is kept
// for the next call. What it does not judge (another status, a hook's
// 401, a broken connection) goes through the SDK: TestUnauthorizedFiresTheHook,
// TestHungEngineIsTransientWithinTheBound and TestNoEngineIsTransient hold
// those paths.
func TestQuickGetAnswersAsTheSDK(t *testing.T) {
	p, _ := newTestProvider(t)
	owner := testOwner(t)
	id := create(t, p, owner, protocol.Spec{}, map[string]string{"n": "1"})
	ctx := testCtx(t)

	var quick container.InspectResponse
	found, handled := p.quickGet(ctx, "/containers/"+id+"/json", &quick)
	if !found || !handled {
		t.Fatalf("quickGet of a sandbox: found %v, handled %v", found, handled)
	}
	viaSDK, err := p.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// State's times move between the two reads only if the sandbox does.
	if !reflect.DeepEqual(quick.Config, viaSDK.Container.Config) || quick.ID != viaSDK.Container.ID || quick.Name != viaSDK.Container.Name ||
		!reflect.DeepEqual(quick.HostConfig, viaSDK.Container.HostConfig) || quick.State.Status != viaSDK.Container.State.Status {
		t.Fatalf("quickGet and the SDK disagree:\n%+v\n%+v", quick, viaSDK.Container)
	}
	missing := strings.Repeat("0", 63) + "1"
	if found, handled := p.quickGet(ctx, "/containers/"+missing+"/json", &container.InspectResponse{}); found || !handled {
		t.Fatalf("quickGet of a missing container: found %v, handled %v", found, handled)
	}
	p.quick.mu.Lock()
	idle := len(p.quick.idle)
	p.quick.mu.Unlock()
	if idle != 1 {
		t.Fatalf("%d idle connections after three calls one at a time, want 1", idle)
	}
	if list, err := p.ListOwned(ctx, owner); err != nil || len(list) != 1 || list[0].SandboxID != id || list[0].Tags["n"] != "1" {
		t.Fatalf("ListOwned = %+v, %v", list, err)
	}
	if owner2, err := p.ReadOwner(ctx, missing, owner.Key); protocol.KindOf(err) != protocol.KindNotFound {
		t.Fatalf("ReadOwner of a missing id = %q, %v", owner2, err)
	}
	// A call whose context is gone never keeps its connection.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, handled := p.quickGet(gone, "/containers/"+id+"/json", &container.InspectResponse{}); handled {
		t.Log("a cancelled call was answered (the engine was quicker than the cancel)")
	}
}
