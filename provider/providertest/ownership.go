package providertest

import (
	"strings"
	"testing"

	"github.com/resident-dev/resident/provider"
)

// testAmbiguous plants sandboxes carrying two owner-shaped tags, as a
// backend touched by another tool or an older resident might hold them, and
// checks that no install owns them: not the one either tag names, not one
// of another prefix. The resident gates every call on a sandbox id with
// ReadOwner (or KnownOwner), so this is what keeps exec, read and terminate
// away from them too.
func testAmbiguous(t *testing.T, h Harness) {
	if h.Plant == nil {
		t.Skip("Harness.Plant is nil: the provider's backend cannot be written to directly")
	}
	e := newEnv(t, h)
	other := provider.Owner{Key: "evil-install-id", InstallID: "evil-" + e.owner.InstallID}
	upper := provider.Owner{Key: strings.ToUpper(OwnerKey), InstallID: e.owner.InstallID}
	ids := map[string]string{
		"two prefixes": h.Plant(t, map[string]string{OwnerKey: e.owner.InstallID, other.Key: other.InstallID, "job": "j"}),
		"case variant": h.Plant(t, map[string]string{OwnerKey: e.owner.InstallID, upper.Key: upper.InstallID}),
	}
	memory, _ := e.p.(provider.OwnerMemory)
	for _, o := range []provider.Owner{e.owner, other, upper} {
		list, err := e.p.ListOwned(ctx(t), o)
		if err != nil {
			t.Fatal(err)
		}
		for name, id := range ids {
			if containsID(list, id) {
				t.Errorf("%s: ListOwned(%s=%s) lists the ambiguous sandbox", name, o.Key, o.InstallID)
			}
			if got, err := e.p.ReadOwner(ctx(t), id, o.Key); err != nil || got != "" {
				t.Errorf("%s: ReadOwner(%s) = %q, %v; want nobody", name, o.Key, got, err)
			}
			if memory == nil {
				continue
			}
			if got, known := memory.KnownOwner(id, o.Key); known && got != "" {
				t.Errorf("%s: KnownOwner(%s) = %q; want nobody", name, o.Key, got)
			}
		}
	}
}
