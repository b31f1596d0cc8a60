package docker

import (
	"context"
	"slices"
	"sync"
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

// An idle member is listed by ListIdle (its owner's only) and not by
// ListOwned; of concurrent claims exactly one wins, and the claimed member
// is then an ordinary sandbox with exactly the host's tags.
func TestPoolMemberClaim(t *testing.T) {
	p, _ := newTestProvider(t)
	owner := testOwner(t)
	mark := provider.PoolMark{Key: "k1", MaxIdle: time.Hour}
	id := createIdle(t, p, owner, mark)

	idle, err := p.ListIdle(testCtx(t), owner)
	if err != nil || len(idle) != 1 || idle[0].SandboxID != id || idle[0].Mark != mark || !idle[0].Running {
		t.Fatalf("ListIdle = %+v, %v", idle, err)
	}
	if owned, err := p.ListOwned(testCtx(t), owner); err != nil || len(owned) != 0 {
		t.Fatalf("ListOwned shows an idle member: %+v, %v", owned, err)
	}
	other := provider.Owner{Key: owner.Key, InstallID: owner.InstallID + "-other"}
	if idle, err := p.ListIdle(testCtx(t), other); err != nil || len(idle) != 0 {
		t.Fatalf("another install's ListIdle = %+v, %v", idle, err)
	}

	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = p.Claim(testCtx(t), id) }()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case protocol.KindOf(err) != protocol.KindNotFound:
			t.Fatalf("a losing claim: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d claims won, want exactly 1: %v", won, errs)
	}
	owned, err := p.ListOwned(testCtx(t), owner)
	if err != nil || len(owned) != 1 || owned[0].SandboxID != id || len(owned[0].Tags) != 2 || owned[0].Tags["job"] != "pooled" {
		t.Fatalf("ListOwned after the claim = %+v, %v", owned, err)
	}
	if idle, _ := p.ListIdle(testCtx(t), owner); len(idle) != 0 {
		t.Fatalf("a claimed member is still idle: %+v", idle)
	}
	if err := p.Claim(testCtx(t), id); protocol.KindOf(err) != protocol.KindNotFound {
		t.Fatalf("claiming an ordinary sandbox: %v", err)
	}
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
