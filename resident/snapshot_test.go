package resident

import (
	"context"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// snapFake records snapshot calls; the provider's own rules are tested by
// providertest on real backends.
type snapFake struct {
	*fakeProvider
}

var _ provider.Snapshotter = snapFake{}

func (f snapFake) Info() provider.Info {
	info := f.fakeProvider.Info()
	info.Capabilities.Snapshot = true
	return info
}

func (f snapFake) Snapshot(_ context.Context, id string, _ provider.Owner, name string) (protocol.Snapshot, error) {
	f.record("snapshot " + id + " " + name)
	return protocol.Snapshot{Name: name, Image: protocol.SnapshotPrefix + name}, nil
}

func (f snapFake) ListSnapshots(context.Context, provider.Owner) ([]protocol.Snapshot, error) {
	return nil, nil
}

func (f snapFake) DeleteSnapshot(_ context.Context, _ provider.Owner, name string) (bool, error) {
	f.record("delete_snapshot " + name)
	return true, nil
}

// The resident gates snapshots: names are checked, another install's
// sandbox is not_found before the provider hears of it, and a provider
// without the capability is named in the refusal, also for spec.image
// "snapshot:NAME".
func TestSnapshotGates(t *testing.T) {
	fake := snapFake{newFake()}
	fake.plant("foreign", "resident-install-id", "other-install")
	h := startHost(t, fake)
	if !h.initialize(nil).Capabilities.Snapshot {
		t.Fatal("capabilities.snapshot is false with a Snapshotter")
	}
	var box protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{"image": "img"}}, &box)
	var snap protocol.Snapshot
	h.call(protocol.MethodSandboxSnapshot, map[string]any{"sandbox_id": box.SandboxID, "name": "setup-1"}, &snap)
	if snap.Image != "snapshot:setup-1" || !fake.called("snapshot "+box.SandboxID+" setup-1") {
		t.Fatalf("snapshot = %+v", snap)
	}
	h.callErr(protocol.MethodSandboxSnapshot, map[string]any{"sandbox_id": "foreign", "name": "x"}, protocol.KindNotFound)
	for _, bad := range []string{"", "-x", ".x", "a/b", "a:b", strings.Repeat("a", 65)} {
		h.callErr(protocol.MethodSandboxSnapshot, map[string]any{"sandbox_id": box.SandboxID, "name": bad}, protocol.KindInvalidRequest)
		h.callErr(protocol.MethodSnapshotDelete, map[string]any{"name": bad}, protocol.KindInvalidRequest)
	}
	h.callErr(protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{"image": "snapshot:a/b"}}, protocol.KindInvalidRequest)
	var list protocol.ListSnapshotsResult
	h.call(protocol.MethodSnapshotList, nil, &list)
	if list.Snapshots == nil {
		t.Fatal("snapshots must be [] not null")
	}
	if fake.called("snapshot foreign x") {
		t.Fatal("the provider was asked to snapshot another install's sandbox")
	}

	plain := startHost(t, newFake())
	if plain.initialize(nil).Capabilities.Snapshot {
		t.Fatal("capabilities.snapshot without a Snapshotter")
	}
	for _, c := range []struct {
		method string
		params any
	}{
		{protocol.MethodSandboxSnapshot, map[string]any{"sandbox_id": "x", "name": "n"}},
		{protocol.MethodSnapshotList, nil},
		{protocol.MethodSnapshotDelete, map[string]any{"name": "n"}},
		{protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{"image": "snapshot:n"}}},
	} {
		if msg := plain.callErr(c.method, c.params, protocol.KindInvalidRequest); !strings.Contains(msg, "capabilities.snapshot") {
			t.Fatalf("%s: the refusal does not name the capability: %s", c.method, msg)
		}
	}
}
