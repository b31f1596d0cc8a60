package providertest

import (
	"context"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// testRestart plays a resident that crashed and came back: a new provider
// on the same backend must see, use and remove what the old one made, and
// terminating must also stop the old instance's running exec.
func testRestart(t *testing.T, h Harness) {
	old := newEnv(t, h)
	id := old.create(protocol.Spec{}, map[string]string{"job": "before-restart"})
	longRun := start(t, context.Background(), old.p, id, provider.ExecRequest{Argv: []string{"sleep", "300"}})

	fresh := &env{t: t, h: h, p: h.New(t), owner: old.owner}
	list := fresh.listOwned()
	if len(list) != 1 || list[0].SandboxID != id || list[0].Tags["job"] != "before-restart" {
		t.Fatalf("ListOwned after restart = %+v, want %s with its tags", list, id)
	}
	if owner, err := fresh.p.ReadOwner(ctx(t), id, OwnerKey); err != nil || owner != old.owner.InstallID {
		t.Fatalf("ReadOwner after restart = %q, %v", owner, err)
	}
	if out := fresh.sh(id, "", "echo still-here"); out != "still-here\n" {
		t.Fatalf("exec after restart printed %q", out)
	}
	if existed, err := fresh.p.Terminate(ctx(t), id); err != nil || !existed {
		t.Fatalf("Terminate after restart = %v, %v; want true", existed, err)
	}
	st := longRun.wait(t) // the old instance's exec must end: its sandbox is gone
	if st.Code == 0 {
		t.Errorf("exec running during terminate exited 0; want it killed")
	}
	if list := old.listOwned(); len(list) != 0 {
		t.Errorf("old instance still lists %+v", list)
	}
	if existed, err := old.p.Terminate(ctx(t), id); err != nil || existed {
		t.Errorf("old instance Terminate = %v, %v; want false", existed, err)
	}
}

// testLifetime: a sandbox with lifetime_s ends by itself. It may disappear
// or be reported stopped/expired, but it must no longer run.
func testLifetime(t *testing.T, h Harness) {
	e := newEnv(t, h)
	id := e.create(protocol.Spec{LifetimeS: 1}, nil)
	await(t, "the sandbox to end after lifetime_s=1", func() bool {
		for _, sb := range e.listOwned() {
			if sb.SandboxID == id {
				return sb.State == protocol.StateExpired || sb.State == protocol.StateStopped
			}
		}
		return true
	})
	// A sandbox that outlives nothing stays: one without lifetime_s is
	// still there.
	keep := e.create(protocol.Spec{}, nil)
	if !containsID(e.listOwned(), keep) {
		t.Errorf("sandbox without lifetime_s disappeared")
	}
}
