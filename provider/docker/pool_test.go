package docker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

func createIdle(t *testing.T, p *Provider, owner provider.Owner, mark provider.PoolMark) string {
	t.Helper()
	id, err := p.CreateIdle(testCtx(t), protocol.Spec{Image: testImage}, owner, map[string]string{"job": "pooled"}, mark)
	if err != nil {
		t.Fatalf("CreateIdle: %v", err)
	}
	t.Cleanup(func() { _, _ = p.Terminate(context.Background(), id) })
	return id
}

// The start sweep removes members past their max idle time, of any
// install, and leaves younger ones and claimed ones.
func TestSweepRemovesExpiredPoolMembers(t *testing.T) {
	p, _ := newTestProvider(t)
	owner := testOwner(t)
	old := createIdle(t, p, owner, provider.PoolMark{Key: "k", MaxIdle: time.Second})
	young := createIdle(t, p, owner, provider.PoolMark{Key: "k", MaxIdle: time.Hour})
	claimed := createIdle(t, p, owner, provider.PoolMark{Key: "k", MaxIdle: time.Second})
	if err := p.Claim(testCtx(t), claimed); err != nil {
		t.Fatal(err)
	}
	// The engine's created time has a one-second grain: wait until the old
	// member is past its max idle time by the same clock the sweep reads.
	idle, _ := p.ListIdle(testCtx(t), owner)
	for _, m := range idle {
		if m.SandboxID == old {
			for time.Since(m.CreatedAt) < 2*time.Second {
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	if err := p.sweepIdle(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	idle, _ = p.ListIdle(testCtx(t), owner)
	var left []string
	for _, m := range idle {
		left = append(left, m.SandboxID)
	}
	if slices.Contains(left, old) || !slices.Contains(left, young) {
		t.Fatalf("after the sweep idle = %v (old %s, young %s)", left, old, young)
	}
	if owned, _ := p.ListOwned(testCtx(t), owner); len(owned) != 1 || owned[0].SandboxID != claimed {
		t.Fatalf("the sweep touched a claimed member: %+v", owned)
	}
}
