package kubernetes

import (
	"context"
	"testing"

	"github.com/resident-dev/resident/protocol"
)

// KnownOwner answers from what create learnt, and for a pod reached by a
// provider that did not make it once it read it; never for an id it has
// not seen, nor after terminate.
func TestKnownOwner(t *testing.T) {
	p := newTestProvider(t)
	owner := testOwner("known")
	id := createFor(t, p, owner, protocol.Spec{Image: cluster.Image, Network: "bridge"})
	if got, ok := p.KnownOwner(id, owner.Key); !ok || got != owner.InstallID {
		t.Fatalf("after create: %q, %v", got, ok)
	}
	if _, ok := p.KnownOwner(newID(), owner.Key); ok {
		t.Fatal("an id never seen is known")
	}
	other := newTestProvider(t)
	if _, ok := other.KnownOwner(id, owner.Key); ok {
		t.Fatal("a provider that never reached the pod knows it")
	}
	if _, _, err := run(context.Background(), other, id, "true"); err != nil {
		t.Fatal(err)
	}
	if got, ok := other.KnownOwner(id, owner.Key); !ok || got != owner.InstallID {
		t.Fatalf("after an exec: %q, %v", got, ok)
	}
	if _, err := p.Terminate(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.KnownOwner(id, owner.Key); ok {
		t.Fatal("a terminated sandbox is known")
	}
}
