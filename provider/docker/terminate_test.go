package docker

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
)

// Two terminates of one sandbox race (a host retry, an expiry): both
// answer only once the sandbox is gone, so whatever the host does next
// with its volumes (remount, remove) does not meet a container that is
// still being removed. Exactly one of them removed it.
func TestConcurrentTerminatesAnswerOnceGone(t *testing.T) {
	needEngine(t)
	p, _ := newTestProvider(t)
	for i := range 2 {
		vol := fmt.Sprintf("%s-term%d", runID, i)
		seedVolume(t, p, vol, map[string]string{"f": "x"})
		id := create(t, p, testOwner(t), protocol.Spec{Volumes: []protocol.VolumeMount{{Name: vol, Path: "/data"}}}, nil)
		var wg sync.WaitGroup
		existed := make([]bool, 2)
		for j := range existed {
			wg.Go(func() {
				var err error
				if existed[j], err = p.Terminate(testCtx(t), id); err != nil {
					t.Errorf("Terminate: %v", err)
				}
			})
		}
		wg.Wait()
		if existed[0] == existed[1] {
			t.Errorf("round %d: existed = %v; want exactly one remover", i, existed)
		}
		if _, err := p.cli.VolumeRemove(context.Background(), vol, client.VolumeRemoveOptions{}); err != nil {
			t.Fatalf("round %d: the volume is still held after both terminates answered: %v", i, err)
		}
	}
}
