package resident

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

var poolOwner = provider.Owner{Key: "resident-install-id", InstallID: "test-install"}

func poolCreate(size int, maxIdle int64) map[string]any {
	return map[string]any{
		"spec": map[string]any{"image": "img"}, "tags": map[string]string{"job": "j"},
		"pool": map[string]any{"size": size, "max_idle_s": maxIdle},
	}
}

// The first create of a pool fills it and is handed the first member made
// (no create of its own); the next is handed a member at once, which
// list_owned then shows as the host's own, and the pool refills to its
// size. Members waiting are never listed.
func TestPoolHandsOutAndRefills(t *testing.T) {
	fake := newPoolFake()
	h := startHost(t, fake)
	if caps := h.initialize(nil).Capabilities; !caps.Pool {
		t.Fatal("capabilities.pool is false with a Pooler")
	}
	var first, second protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, poolCreate(2, 60), &first)
	if !fake.called("claim " + first.SandboxID) {
		t.Fatalf("the first create was not handed the first member made: %v", fake.callList())
	}
	waitFor(t, "the pool to fill", func() bool { return fake.idleCount() == 2 })
	h.call(protocol.MethodSandboxCreate, poolCreate(2, 60), &second)
	if !fake.called("claim " + second.SandboxID) {
		t.Fatalf("the second create was not handed a pool member: %v", fake.callList())
	}
	if n := fake.count("create"); n != 0 {
		t.Fatalf("%d creates beside the pool's, want 0", n)
	}
	waitFor(t, "the pool to refill", func() bool { return fake.idleCount() == 2 })
	var list protocol.ListOwnedResult
	h.call(protocol.MethodSandboxList, nil, &list)
	if len(list.Sandboxes) != 2 {
		t.Fatalf("list_owned shows what was not handed out, or misses what was: %+v", list.Sandboxes)
	}
	for _, b := range list.Sandboxes {
		if b.SandboxID != first.SandboxID && b.SandboxID != second.SandboxID {
			t.Fatalf("list_owned shows an idle member: %+v", b)
		}
		if b.Tags["job"] != "j" {
			t.Fatalf("a pooled sandbox lost its tags: %+v", b)
		}
	}
	// Other tags are another pool: no member of this one is handed out.
	other := poolCreate(2, 60)
	other["tags"] = map[string]string{"job": "k"}
	var third protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, other, &third)
	h.call(protocol.MethodSandboxList, nil, &list)
	for _, b := range list.Sandboxes {
		if b.SandboxID == third.SandboxID && b.Tags["job"] != "k" {
			t.Fatalf("a member of another pool (other tags) was handed out: %+v", b)
		}
	}
}

// Members idle past max_idle_s are removed, and an unused pool is not
// refilled. A shutdown leaves the ready members, which the next resident
// of the install adopts.
func TestPoolExpiryAndShutdown(t *testing.T) {
	fake := newPoolFake()
	h := startHost(t, fake)
	h.initialize(nil)
	h.call(protocol.MethodSandboxCreate, poolCreate(3, 1), &protocol.CreateResult{})
	// Three members for the pool and the one the first create was handed.
	waitFor(t, "the pool to fill", func() bool { return fake.count("create_idle") == 4 })
	waitFor(t, "idle members to expire", func() bool { return fake.idleCount() == 0 && fake.boxCount() == 1 })
	if n := fake.count("create_idle"); n != 4 {
		t.Fatalf("an expired pool was refilled: %d creates", n)
	}

	h.call(protocol.MethodSandboxCreate, poolCreate(2, 60), &protocol.CreateResult{})
	waitFor(t, "the pool to fill", func() bool { return fake.idleCount() == 2 })
	h.call(protocol.MethodShutdown, nil, nil)
	if err := <-h.done; err != nil {
		t.Fatal(err)
	}
	h.done <- nil // for the cleanup
	if n := fake.idleCount(); n != 2 {
		t.Fatalf("%d idle members after the shutdown, want the 2 left for the next resident", n)
	}
	next := startHost(t, fake)
	next.initialize(nil)
	var got protocol.CreateResult
	next.call(protocol.MethodSandboxCreate, poolCreate(2, 60), &got)
	if !fake.called("claim " + got.SandboxID) {
		t.Fatal("the next resident did not hand out a member the last one left")
	}
}

// A resident that died left a full pool: the next one adopts the members
// (the next create of that spec and tags gets one), removes those past
// their max idle time, and never touches another install's.
func TestPoolReclaimsWhatADeadResidentLeft(t *testing.T) {
	fake := newPoolFake()
	key := poolKey(protocol.Spec{Image: "img"}, map[string]string{"job": "j"})
	now := time.Now()
	fake.plantIdle("left-1", poolOwner, now, provider.PoolMark{Key: key, MaxIdle: time.Hour})
	fake.plantIdle("left-old", poolOwner, now.Add(-2*time.Hour), provider.PoolMark{Key: key, MaxIdle: time.Hour})
	foreign := provider.Owner{Key: poolOwner.Key, InstallID: "other-install"}
	fake.plantIdle("foreign", foreign, now, provider.PoolMark{Key: key, MaxIdle: time.Hour})
	h := startHost(t, fake)
	h.initialize(nil)
	waitFor(t, "the expired member to be removed", func() bool { return fake.called("terminate left-old") })
	var got protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, poolCreate(1, 60), &got)
	if got.SandboxID != "left-1" {
		t.Fatalf("the dead resident's member was not handed out: got %s, calls %v", got.SandboxID, fake.callList())
	}
	for _, c := range fake.callList() {
		if strings.HasSuffix(c, " foreign") {
			t.Fatalf("another install's member was touched: %s", c)
		}
	}
}

func TestPoolRefusals(t *testing.T) {
	fake := newPoolFake()
	h := startHost(t, fake)
	h.initialize(nil)
	for name, p := range map[string]map[string]any{
		"size 0":     poolCreate(0, 60),
		"size over":  poolCreate(protocol.MaxPoolSize+1, 60),
		"idle < 0":   poolCreate(1, -1),
		"lifetime_s": {"spec": map[string]any{"image": "img", "lifetime_s": 60}, "pool": map[string]any{"size": 1}},
	} {
		t.Run(name, func(t *testing.T) { h.callErr(protocol.MethodSandboxCreate, p, protocol.KindInvalidRequest) })
	}
	if fake.called("create") || fake.called("create_idle") {
		t.Fatal("a refused pool create reached the provider")
	}

	plain := startHost(t, newFake())
	if plain.initialize(nil).Capabilities.Pool {
		t.Fatal("capabilities.pool without a Pooler")
	}
	msg := plain.callErr(protocol.MethodSandboxCreate, poolCreate(1, 60), protocol.KindInvalidRequest)
	if !strings.Contains(msg, "capabilities.pool") {
		t.Fatalf("the refusal does not name the capability: %s", msg)
	}
}

// A create that finds none ready waits for a member being made instead of
// making one more: it is handed the first made. When that make fails, the
// waiting create makes its own sandbox; one cancelled while it waits
// answers cancelled, and the member made for it joins the pool.
func TestPoolMissWaitsForAMemberBeingMade(t *testing.T) {
	fake := newPoolFake()
	fake.gate = make(chan error)
	h := startHost(t, fake)
	h.initialize(nil)
	id := h.send(protocol.MethodSandboxCreate, poolCreate(1, 60))
	waitFor(t, "the create to wait", func() bool { return waits(h) == 1 })
	fake.gate <- nil
	var got protocol.CreateResult
	if m := h.await(id); m.Error != nil || json.Unmarshal(m.Result, &got) != nil || !fake.called("claim "+got.SandboxID) {
		t.Fatalf("the waiting create was not handed the member made: %+v, calls %v", m, fake.callList())
	}
	if fake.called("create") {
		t.Fatal("a create that waited for a member made one of its own too")
	}

	// The refill behind the hand-out fails: the next create, waiting on it,
	// makes its own.
	waitFor(t, "the refill to be in the making", func() bool { return fake.count("create_idle") == 2 })
	id = h.send(protocol.MethodSandboxCreate, poolCreate(1, 60))
	waitFor(t, "the create to wait", func() bool { return waits(h) == 2 })
	fake.gate <- protocol.Errorf(protocol.KindTransient, "engine trouble")
	if m := h.await(id); m.Error != nil || !fake.called("create") {
		t.Fatalf("the create whose member failed did not make its own: %+v, calls %v", m, fake.callList())
	}

	// Cancelled while it waits (for the member its own take started): the
	// member made for it is not lost.
	id = h.send(protocol.MethodSandboxCreate, poolCreate(1, 60))
	waitFor(t, "the create to wait", func() bool { return waits(h) == 3 })
	h.notify(protocol.MethodCancelRequest, map[string]any{"id": mustAtoi(id)})
	if m := h.await(id); m.Error == nil {
		t.Fatalf("a cancelled create answered %s", m.Result)
	}
	fake.gate <- nil
	waitFor(t, "the member made to wait in the pool", func() bool { return fake.idleCount() == 1 })
	var next protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, poolCreate(1, 60), &next)
	if !fake.called("claim " + next.SandboxID) {
		t.Fatalf("the member made for a cancelled create was not handed out next: %v", fake.callList())
	}
	close(fake.gate)
}

// waits counts the creates that waited for a member being made.
func waits(h *host) int {
	return strings.Count(h.logs.String(), "create waits for a pool member being made")
}
