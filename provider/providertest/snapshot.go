package providertest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// runSnapshot checks a provider.Snapshotter (capabilities.snapshot): a
// snapshot holds the sandbox's files as they were; ten forks each start
// from it and none sees another's writes or the source's later ones; it is
// owner-scoped (another install cannot list, use or delete it); a name in
// use is conflict; deleting it leaves its forks running.
func runSnapshot(t *testing.T, h Harness) {
	e := newEnv(t, h)
	snaps, ok := e.p.(provider.Snapshotter)
	if !ok || !e.p.Info().Capabilities.Snapshot {
		t.Skip("the provider does not announce capabilities.snapshot")
	}
	src := e.create(protocol.Spec{}, nil)
	e.sh(src, "/", "mkdir -p /srv/setup && echo prepared > /srv/setup/state")
	name := uniqueName("snap")
	snap, err := snaps.Snapshot(ctx(t), src, e.owner, name)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	t.Cleanup(func() { _, _ = snaps.DeleteSnapshot(ctx(t), e.owner, name) })
	if snap.Name != name || snap.Image != protocol.SnapshotPrefix+name || snap.CreatedAt.IsZero() {
		t.Fatalf("Snapshot = %+v", snap)
	}
	_, err = snaps.Snapshot(ctx(t), src, e.owner, name)
	wantKind(t, "a snapshot under a name in use", err, protocol.KindConflict)
	e.sh(src, "/", "echo later > /srv/setup/later")

	other := provider.Owner{Key: OwnerKey, InstallID: uniqueName("other")}
	if list, err := snaps.ListSnapshots(ctx(t), other); err != nil || len(list) != 0 {
		t.Fatalf("another install lists %+v, %v", list, err)
	}
	_, err = e.p.Create(ctx(t), protocol.Spec{Image: snap.Image}, other, nil)
	wantKind(t, "another install's create from the snapshot", err, protocol.KindNotFound)
	if existed, err := snaps.DeleteSnapshot(ctx(t), other, name); err != nil || existed {
		t.Fatalf("another install's delete: existed=%v, %v", existed, err)
	}
	if list, err := snaps.ListSnapshots(ctx(t), e.owner); err != nil || len(list) != 1 || list[0].Name != name {
		t.Fatalf("ListSnapshots = %+v, %v", list, err)
	}

	forks := make([]string, 10)
	for i := range forks {
		forks[i] = e.create(protocol.Spec{Image: snap.Image}, map[string]string{"fork": fmt.Sprint(i)})
		e.sh(forks[i], "/", fmt.Sprintf("echo %d > /srv/setup/fork-%d", i, i))
	}
	for i, id := range forks {
		got := e.sh(id, "/", "cat /srv/setup/state; ls /srv/setup")
		want := fmt.Sprintf("prepared\nfork-%d\nstate\n", i)
		if got != want {
			t.Fatalf("fork %d sees %q, want %q (only the snapshot's files and its own)", i, got, want)
		}
	}
	if existed, err := snaps.DeleteSnapshot(ctx(t), e.owner, name); err != nil || !existed {
		t.Fatalf("DeleteSnapshot: existed=%v, %v", existed, err)
	}
	if list, _ := snaps.ListSnapshots(ctx(t), e.owner); len(list) != 0 {
		t.Fatalf("a deleted snapshot is listed: %+v", list)
	}
	_, err = e.p.Create(ctx(t), protocol.Spec{Image: snap.Image}, e.owner, nil)
	wantKind(t, "a create from a deleted snapshot", err, protocol.KindNotFound)
	if out := e.sh(forks[0], "/", "cat /srv/setup/state"); strings.TrimSpace(out) != "prepared" {
		t.Fatalf("a fork after its snapshot was deleted: %q", out)
	}
}
