package docker

import (
	"strings"
	"testing"

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
