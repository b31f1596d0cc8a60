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

// A snapshot deleted while a fork runs from it leaves the engine an
// untagged image; the start sweep removes it once the fork is gone (and
// it is old enough not to be a build's step), never while it runs.
func TestSweepRemovesUntaggedSnapshots(t *testing.T) {
	p, _ := newTestProvider(t)
	owner := testOwner(t)
	src := create(t, p, owner, protocol.Spec{}, nil)
	if _, err := p.Snapshot(testCtx(t), src, owner, "swept"); err != nil {
		t.Fatal(err)
	}
	imageID, err := p.findSnapshot(testCtx(t), owner, "swept")
	if err != nil {
		t.Fatal(err)
	}
	fork, err := p.Create(testCtx(t), protocol.Spec{Image: "snapshot:swept"}, owner, nil)
	if err != nil {
		t.Fatal(err)
	}
	if existed, err := p.DeleteSnapshot(testCtx(t), owner, "swept"); err != nil || !existed {
		t.Fatalf("DeleteSnapshot: %v %v", existed, err)
	}
	exists := func() bool {
		_, err := p.cli.ImageInspect(testCtx(t), imageID)
		return err == nil
	}
	if err := p.sweepImagesOlderThan(testCtx(t), 0); err != nil || !exists() {
		t.Fatalf("the sweep removed an image a running fork uses (err %v)", err)
	}
	if err := p.sweepImages(testCtx(t)); err != nil || !exists() {
		t.Fatalf("the sweep removed a young untagged image (err %v)", err)
	}
	if _, err := p.Terminate(testCtx(t), fork); err != nil {
		t.Fatal(err)
	}
	// Terminate answers before the engine has removed the container, which
	// holds the image until then.
	awaitRemoved(t, p, fork)
	if err := p.sweepImagesOlderThan(testCtx(t), 0); err != nil || exists() {
		t.Fatalf("the untagged snapshot outlived its last fork's sweep (err %v)", err)
	}
}
