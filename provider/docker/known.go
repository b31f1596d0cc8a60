package docker

import "sync"

// knownSandboxes remembers ids already seen to carry our sandbox labels, so
// an exec that follows the resident's ownership check does not inspect the
// container a second time. It is safe because a container's labels never
// change and its id is never reused: what the set says stays true for the
// container's whole life, and a container removed since answers the exec's
// own create with "no such container". It only ever saves a round trip.
type knownSandboxes struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

// maxKnownSandboxes bounds the set; past it the set starts over, which costs
// one inspect per sandbox seen again.
const maxKnownSandboxes = 4096

func (k *knownSandboxes) add(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ids == nil || len(k.ids) >= maxKnownSandboxes {
		k.ids = make(map[string]struct{})
	}
	k.ids[id] = struct{}{}
}

func (k *knownSandboxes) has(id string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.ids[id]
	return ok
}

func (k *knownSandboxes) forget(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.ids, id)
}
