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

// A claim renames by the idle name the provider remembers from its own
// create or listing (no inspect first). Of two providers that both know a
// member, exactly one hands it out; one that never saw it inspects and
// finds it claimed; a member claimed once is never claimed again.
func TestClaimByRememberedNameOnce(t *testing.T) {
	maker, _ := newTestProvider(t)
	other, _ := newTestProvider(t)
	stranger, _ := newTestProvider(t)
	owner := testOwner(t)
	for round := range 3 {
		id := createIdle(t, maker, owner, provider.PoolMark{Key: "k", MaxIdle: time.Hour})
		if _, err := other.ListIdle(testCtx(t), owner); err != nil {
			t.Fatal(err)
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, p := range []*Provider{maker, other} {
			wg.Go(func() { errs[i] = p.Claim(testCtx(t), id) })
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("round %d: claims = %v; want exactly one handed out", round, errs)
		}
		for _, err := range errs {
			if err != nil && protocol.KindOf(err) != protocol.KindNotFound {
				t.Fatalf("round %d: the lost claim is %v, want not_found", round, err)
			}
		}
		for _, p := range []*Provider{maker, other, stranger} {
			if err := p.Claim(testCtx(t), id); protocol.KindOf(err) != protocol.KindNotFound {
				t.Fatalf("round %d: a claim of a member handed out = %v, want not_found", round, err)
			}
		}
		if owned, _ := maker.ListOwned(testCtx(t), owner); !slices.ContainsFunc(owned, func(b protocol.Sandbox) bool { return b.SandboxID == id }) {
			t.Fatalf("round %d: the claimed member is not listed: %+v", round, owned)
		}
	}
}
