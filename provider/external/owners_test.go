package external

import (
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// A provider that announces fixed_owners is remembered: what it created,
// listed and answered to read_owner, under the key it was asked with,
// until it is terminated. One that does not is asked every time.
func TestKnownOwnersOnlyWhenAnnounced(t *testing.T) {
	owner := provider.Owner{Key: "resident-install-id", InstallID: "install-a"}
	for _, tc := range []struct {
		mode  string
		fixed bool
	}{{"fixed-owners", true}, {"plain", false}} {
		t.Run(tc.mode, func(t *testing.T) {
			p, err := openFake(t, tc.mode, time.Minute, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx := bg(t)
			memory := p.(provider.OwnerMemory)
			id, err := p.Create(ctx, protocol.Spec{}, owner, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, known := memory.KnownOwner(id, owner.Key)
			if known != tc.fixed || (known && got != owner.InstallID) {
				t.Fatalf("after create: KnownOwner = %q, %v; want known %v", got, known, tc.fixed)
			}
			if _, known := memory.KnownOwner(id, "other-install-id"); known {
				t.Fatal("a key never asked about is known")
			}
			if o, err := p.ReadOwner(ctx, id, "other-install-id"); err != nil || o != "" {
				t.Fatalf("ReadOwner under another key: %q, %v", o, err)
			}
			got, known = memory.KnownOwner(id, "other-install-id")
			if known != tc.fixed || got != "" {
				t.Fatalf("after read_owner under another key: KnownOwner = %q, %v; want nobody, known %v", got, known, tc.fixed)
			}
			if _, err := p.Terminate(ctx, id); err != nil {
				t.Fatal(err)
			}
			if _, known := memory.KnownOwner(id, owner.Key); known {
				t.Fatal("a terminated sandbox's owner is still known")
			}
			if _, err := p.ReadOwner(ctx, "sb-missing", owner.Key); protocol.KindOf(err) != protocol.KindNotFound {
				t.Fatalf("ReadOwner of a missing sandbox: %v", err)
			}
			if _, known := memory.KnownOwner("sb-missing", owner.Key); known {
				t.Fatal("a missing sandbox's owner is known")
			}
		})
	}
}
