package providertest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

func runLifecycle(t *testing.T, h Harness) {
	t.Run("info_names_the_provider", func(t *testing.T) {
		info := newEnv(t, h).p.Info()
		if info.Name == "" || info.Version == "" {
			t.Fatalf("Info() = %+v: name and version are required", info)
		}
	})

	t.Run("create_and_list_owned_with_tags", func(t *testing.T) {
		e := newEnv(t, h)
		id := e.create(protocol.Spec{}, map[string]string{"resident-session": "s1", "job": "j-7"})
		got := e.listOwned()
		if len(got) != 1 || got[0].SandboxID != id {
			t.Fatalf("ListOwned = %+v, want exactly %s", got, id)
		}
		sb := got[0]
		want := map[string]string{"resident-session": "s1", "job": "j-7", OwnerKey: e.owner.InstallID}
		for k, v := range want {
			if sb.Tags[k] != v {
				t.Errorf("tag %q = %q, want %q (tags %v)", k, sb.Tags[k], v, sb.Tags)
			}
		}
		// Every provider gives created_at as UTC in whole seconds, so a
		// host sees one format whichever provider it drives.
		if at := sb.CreatedAt.Format(time.RFC3339Nano); sb.CreatedAt.IsZero() || strings.Contains(at, ".") || !strings.HasSuffix(at, "Z") {
			t.Errorf("created_at %s: want a UTC time in whole seconds", at)
		}
		if sb.State == "" || sb.State == protocol.StateExpired {
			t.Errorf("state = %q, want a live state", sb.State)
		}
	})

	t.Run("owner_shaped_tags_are_refused", func(t *testing.T) {
		// The resident refuses such a tag first; the provider must still
		// not let an incoming tag decide ownership, under any prefix.
		e := newEnv(t, h)
		intruder := provider.Owner{Key: "Evil-Install-Id", InstallID: "intruder-" + e.owner.InstallID}
		for _, key := range []string{OwnerKey, strings.ToUpper(OwnerKey), intruder.Key, "dev.resident.managed"} {
			_, err := e.p.Create(ctx(t), protocol.Spec{Image: h.Image}, e.owner, map[string]string{key: intruder.InstallID, "k": "v"})
			wantKind(t, "Create with tag "+key, err, protocol.KindInvalidRequest)
			if !strings.Contains(err.Error(), key) {
				t.Errorf("the refusal %q does not name the tag %q", err, key)
			}
		}
		for _, o := range []provider.Owner{e.owner, intruder, {Key: OwnerKey, InstallID: intruder.InstallID}} {
			if list, err := e.p.ListOwned(ctx(t), o); err != nil || len(list) != 0 {
				t.Errorf("ListOwned(%s=%s) after the refused creates = %+v, %v; nothing may be created", o.Key, o.InstallID, list, err)
			}
		}
	})

	t.Run("ambiguous_sandbox_belongs_to_nobody", func(t *testing.T) { testAmbiguous(t, h) })

	t.Run("list_owned_is_an_exact_match", func(t *testing.T) {
		e := newEnv(t, h)
		base := e.owner.InstallID
		owners := []string{base, base + "2", base[:len(base)-1], "b" + base}
		ids := map[string]string{}
		for _, o := range owners {
			ids[o] = createAs(t, e.p, h, provider.Owner{Key: OwnerKey, InstallID: o}, protocol.Spec{}, nil)
		}
		for _, o := range owners {
			list, err := e.p.ListOwned(ctx(t), provider.Owner{Key: OwnerKey, InstallID: o})
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].SandboxID != ids[o] {
				t.Errorf("ListOwned(%s) = %+v, want only %s", o, list, ids[o])
			}
		}
		if list, err := e.p.ListOwned(ctx(t), provider.Owner{Key: OwnerKey, InstallID: "unused-" + base}); err != nil || len(list) != 0 || list == nil {
			t.Errorf("ListOwned(nobody) = %#v, %v; want an empty, non-nil list", list, err)
		}
	})

	t.Run("read_owner", func(t *testing.T) {
		e := newEnv(t, h)
		id := e.create(protocol.Spec{}, map[string]string{"other": "x"})
		if owner, err := e.p.ReadOwner(ctx(t), id, OwnerKey); err != nil || owner != e.owner.InstallID {
			t.Errorf("ReadOwner = %q, %v; want %q", owner, err, e.owner.InstallID)
		}
		for _, key := range []string{"no-such-key", "other", "other-install-id"} {
			if owner, err := e.p.ReadOwner(ctx(t), id, key); err != nil || owner != "" {
				t.Errorf("ReadOwner(%s) = %q, %v; want \"\": only the owner key names an owner", key, owner, err)
			}
		}
		// A provider that remembers owners never contradicts ReadOwner.
		if memory, ok := e.p.(provider.OwnerMemory); ok {
			for key, want := range map[string]string{OwnerKey: e.owner.InstallID, "other": "", "no-such-key": ""} {
				if owner, known := memory.KnownOwner(id, key); known && owner != want {
					t.Errorf("KnownOwner(%s) = %q; ReadOwner says %q", key, owner, want)
				}
			}
		}
	})

	t.Run("terminate_is_idempotent", func(t *testing.T) {
		e := newEnv(t, h)
		id := e.create(protocol.Spec{}, nil)
		if existed, err := e.p.Terminate(ctx(t), id); err != nil || !existed {
			t.Fatalf("first Terminate = %v, %v; want true", existed, err)
		}
		if existed, err := e.p.Terminate(ctx(t), id); err != nil || existed {
			t.Fatalf("second Terminate = %v, %v; want false", existed, err)
		}
		if list := e.listOwned(); len(list) != 0 {
			t.Errorf("ListOwned after terminate = %+v", list)
		}
		_, err := e.p.ReadOwner(ctx(t), id, OwnerKey)
		wantKind(t, "ReadOwner after terminate", err, protocol.KindNotFound)
		_, err = e.p.Exec(ctx(t), id, provider.ExecRequest{Argv: []string{"true"}})
		wantKind(t, "Exec after terminate", err, protocol.KindNotFound)
	})

	t.Run("concurrent_terminate_reports_existed_once", func(t *testing.T) {
		e := newEnv(t, h)
		id := e.create(protocol.Spec{}, nil)
		var wg sync.WaitGroup
		results := make([]bool, 4)
		for i := range results {
			wg.Go(func() {
				existed, err := e.p.Terminate(context.Background(), id)
				if err != nil {
					t.Errorf("Terminate: %v", err)
				}
				results[i] = existed
			})
		}
		wg.Wait()
		if n := countTrue(results); n != 1 {
			t.Errorf("concurrent Terminate: existed=true %d times, want once (%v)", n, results)
		}
	})

	t.Run("missing_and_malformed_ids", func(t *testing.T) {
		e := newEnv(t, h)
		for _, id := range []string{"no-such-sandbox", "", ".", "..", "../..", "a/b", "/etc", "x\x00y"} {
			if existed, err := e.p.Terminate(ctx(t), id); err != nil || existed {
				t.Errorf("Terminate(%q) = %v, %v; want false, nil", id, existed, err)
			}
			_, err := e.p.ReadOwner(ctx(t), id, OwnerKey)
			wantKind(t, "ReadOwner("+id+")", err, protocol.KindNotFound)
			_, err = e.p.Exec(ctx(t), id, provider.ExecRequest{Argv: []string{"true"}})
			wantKind(t, "Exec("+id+")", err, protocol.KindNotFound)
			if fw, ok := e.p.(provider.FileWriter); ok && e.p.Info().Capabilities.WriteFile {
				err := fw.WriteFile(ctx(t), id, "f", []byte("x"), nil)
				wantKind(t, "WriteFile("+id+")", err, protocol.KindNotFound)
			}
		}
	})

	t.Run("restarted_resident_lists_and_terminates", func(t *testing.T) { testRestart(t, h) })
	t.Run("lifetime_ends_the_sandbox", func(t *testing.T) { testLifetime(t, h) })
}

func (e *env) listOwned() []protocol.Sandbox {
	e.t.Helper()
	list, err := e.p.ListOwned(ctx(e.t), e.owner)
	if err != nil {
		e.t.Fatalf("ListOwned: %v", err)
	}
	return list
}

func containsID(list []protocol.Sandbox, id string) bool {
	for _, sb := range list {
		if sb.SandboxID == id {
			return true
		}
	}
	return false
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
