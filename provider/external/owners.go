package external

import "sync"

// maxKnownOwners bounds what the resident remembers of a provider's
// sandboxes: an entry is a few dozen bytes, and one forgotten costs only a
// read_owner call.
const maxKnownOwners = 4096

// knownOwners is what a provider that announced fixed_owners has said of
// its sandboxes' owners: tags it cannot change once a sandbox exists, on
// ids it never gives another sandbox, so the answer to read_owner for an
// id never changes either (a reused id would hand one install's memory of
// it to another's sandbox). It saves exec its
// read_owner round trip (provider.OwnerMemory).
type knownOwners struct {
	mu sync.Mutex
	m  map[ownerOf]string
}

type ownerOf struct{ sandboxID, key string }

func (k *knownOwners) add(sandboxID, key, owner string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[ownerOf]string{}
	}
	if _, ok := k.m[ownerOf{sandboxID, key}]; !ok && len(k.m) >= maxKnownOwners {
		for victim := range k.m { // any one: a miss is only a round trip
			delete(k.m, victim)
			break
		}
	}
	k.m[ownerOf{sandboxID, key}] = owner
}

func (k *knownOwners) get(sandboxID, key string) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	owner, ok := k.m[ownerOf{sandboxID, key}]
	return owner, ok
}

// forget drops every key of a sandbox that is gone.
func (k *knownOwners) forget(sandboxID string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for o := range k.m {
		if o.sandboxID == sandboxID {
			delete(k.m, o)
		}
	}
}

// KnownOwner answers as ReadOwner would, from what the provider already
// said, when its handshake announced fixed_owners; otherwise never.
func (p *Provider) KnownOwner(sandboxID, ownerKey string) (string, bool) {
	if p.described == nil || !p.described.FixedOwners {
		return "", false
	}
	return p.owners.get(sandboxID, ownerKey)
}
