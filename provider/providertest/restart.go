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
	// The old instance's exec must end: its sandbox is gone. Where the
	// sandbox has one channel to its keeper, the fresh instance took it
	// over and the old exec already ended then, as transient.
	st, err, ok := longRun.waitWithin(awaitTimeout)
	switch {
	case !ok:
		t.Fatalf("the old instance's exec did not end within %s", awaitTimeout)
	case err != nil:
		wantKind(t, "the old instance's exec, its channel taken over", err, protocol.KindTransient)
	case st.Code == 0:
		t.Errorf("exec running during terminate exited 0; want it killed")
	}
	if list := old.listOwned(); len(list) != 0 {
		t.Errorf("old instance still lists %+v", list)
	}
	if existed, err := old.p.Terminate(ctx(t), id); err != nil || existed {
		t.Errorf("old instance Terminate = %v, %v; want false", existed, err)
	}
}

// testLifetime: a sandbox with lifetime_s ends by itself, and then stays
// listed as expired until it is terminated, on every provider and across a
// restart: a host can tell "expired" from "never existed". Nothing runs in
// it any more; exec and write_file are conflict; read_owner still answers;
// terminate removes it and says it existed.
func testLifetime(t *testing.T, h Harness) {
	e := newEnv(t, h)
	id := e.create(protocol.Spec{LifetimeS: 3}, map[string]string{"job": "short"})
	longRun := start(t, context.Background(), e.p, id, provider.ExecRequest{Argv: []string{"sleep", "300"}})
	await(t, "the sandbox to be listed expired after lifetime_s=3", func() bool {
		list := e.listOwned()
		if !containsID(list, id) {
			t.Fatalf("an expired sandbox vanished from ListOwned; it must stay listed as %q until terminated", protocol.StateExpired)
		}
		return list[0].State == protocol.StateExpired
	})
	if _, _, ended := longRun.waitWithin(awaitTimeout); !ended {
		t.Fatal("an exec running at expiry is still running")
	}
	fresh := &env{t: t, h: h, p: h.New(t), owner: e.owner}
	if list := fresh.listOwned(); len(list) != 1 || list[0].SandboxID != id || list[0].State != protocol.StateExpired || list[0].Tags["job"] != "short" {
		t.Fatalf("a restarted provider lists %+v; want %s expired, with its tags", list, id)
	}
	_, err := e.p.Exec(ctx(t), id, provider.ExecRequest{Argv: []string{"true"}})
	wantKind(t, "Exec in an expired sandbox", err, protocol.KindConflict)
	if fw, ok := e.p.(provider.FileWriter); ok && e.p.Info().Capabilities.WriteFile {
		err := fw.WriteFile(ctx(t), id, "late.txt", []byte("x"), nil)
		wantKind(t, "WriteFile in an expired sandbox", err, protocol.KindConflict)
	}
	if owner, err := e.p.ReadOwner(ctx(t), id, OwnerKey); err != nil || owner != e.owner.InstallID {
		t.Fatalf("ReadOwner of an expired sandbox = %q, %v; want %q", owner, err, e.owner.InstallID)
	}
	if existed, err := e.p.Terminate(ctx(t), id); err != nil || !existed {
		t.Fatalf("Terminate of an expired sandbox = %v, %v; want true", existed, err)
	}
	if existed, err := e.p.Terminate(ctx(t), id); err != nil || existed {
		t.Fatalf("second Terminate = %v, %v; want false", existed, err)
	}
	if containsID(e.listOwned(), id) {
		t.Fatal("a terminated expired sandbox is still listed")
	}
	// A sandbox that outlives nothing stays: one without lifetime_s is
	// still there.
	keep := e.create(protocol.Spec{}, nil)
	if !containsID(e.listOwned(), keep) {
		t.Errorf("sandbox without lifetime_s disappeared")
	}
}
