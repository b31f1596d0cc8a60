package docker

import (
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Another install that names a snapshot by its raw image reference, not
// "snapshot:NAME", gets not_found as for a missing image: the files are not
// its to start from.
func TestSnapshotRawReferenceIsTheOwnersAlone(t *testing.T) {
	p, _ := newTestProvider(t)
	owner := testOwner(t)
	src := create(t, p, owner, protocol.Spec{}, nil)
	if _, err := p.Snapshot(testCtx(t), src, owner, "raw"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = p.DeleteSnapshot(testCtx(t), owner, "raw") })
	other := provider.Owner{Key: owner.Key, InstallID: owner.InstallID + "-other"}
	id, err := p.Create(testCtx(t), protocol.Spec{Image: snapshotRef(owner, "raw")}, other, nil)
	if err == nil {
		_, _ = p.Terminate(testCtx(t), id)
	}
	if protocol.KindOf(err) != protocol.KindNotFound {
		t.Fatalf("another install's create from the raw reference: %v", err)
	}
	// The owner itself may use the raw reference too.
	create(t, p, owner, protocol.Spec{Image: snapshotRef(owner, "raw")}, nil)
}

// The provider itself refuses to snapshot another install's sandbox, as
// missing, whatever the resident checked before.
func TestSnapshotOfAnotherInstallsSandbox(t *testing.T) {
	p, _ := newTestProvider(t)
	owner := testOwner(t)
	src := create(t, p, owner, protocol.Spec{}, nil)
	other := provider.Owner{Key: owner.Key, InstallID: owner.InstallID + "-other"}
	fresh, _ := newTestProvider(t) // knows nothing yet: it must ask the engine
	for _, prov := range []*Provider{p, fresh} {
		if _, err := prov.Snapshot(testCtx(t), src, other, "theirs"); protocol.KindOf(err) != protocol.KindNotFound {
			t.Fatalf("a snapshot of another install's sandbox: %v", err)
		}
	}
}
