package docker

import (
	"maps"
	"sync"

	"github.com/resident-dev/resident/provider"
)

// knownSandboxes remembers the labels of containers already seen to carry
// our sandbox labels, so the calls that follow the resident's ownership
// check do not inspect the container again. It is safe because a
// container's labels never change and its id is never reused: what the set
// says stays true for the container's whole life, and a container removed
// since answers the next engine call with "no such container". It only
// ever saves a round trip; it never answers whether a sandbox exists.
type knownSandboxes struct {
	mu     sync.Mutex
	labels map[string]map[string]string // container id -> its labels, as the engine holds them
	// configs are what a channel's execs need of the container, also
	// fixed for its life: its environment and working directory.
	configs map[string]sandboxConfig
}

// sandboxConfig is the part of a container's config an exec over the
// channel is built from.
type sandboxConfig struct {
	env []string
	dir string
}

// addConfig records a sandbox's config (from an inspect).
func (k *knownSandboxes) addConfig(id string, cfg sandboxConfig) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.configs == nil || len(k.configs) >= maxKnownSandboxes {
		k.configs = make(map[string]sandboxConfig)
	}
	k.configs[id] = cfg
}

// config is a known sandbox's config; ok is false for an unknown id.
func (k *knownSandboxes) config(id string) (sandboxConfig, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	cfg, ok := k.configs[id]
	return cfg, ok
}

// maxKnownSandboxes bounds the set; past it the set starts over, which costs
// one inspect per sandbox seen again.
const maxKnownSandboxes = 4096

// maxKnownLabelBytes bounds what one sandbox may hold in the set. Image
// labels have no size limit of their own; a sandbox with more is not
// remembered and costs an inspect per exec, as before.
const maxKnownLabelBytes = 16 << 10

// add records a sandbox's labels; the caller gives up the map.
func (k *knownSandboxes) add(id string, labels map[string]string) {
	size := 0
	for key, value := range labels {
		size += len(key) + len(value)
	}
	if size > maxKnownLabelBytes {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.labels == nil || len(k.labels) >= maxKnownSandboxes {
		k.labels = make(map[string]map[string]string)
	}
	k.labels[id] = labels
}

func (k *knownSandboxes) has(id string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.labels[id]
	return ok
}

// label is one label of a known sandbox; ok is false for an unknown id.
func (k *knownSandboxes) label(id, key string) (value string, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	labels, ok := k.labels[id]
	return labels[key], ok
}

// owner is provider.OwnerOf over a known sandbox's labels; ok is false for
// an unknown id.
func (k *knownSandboxes) owner(id, key string) (owner string, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	labels, ok := k.labels[id]
	return provider.OwnerOf(labels, key), ok
}

func (k *knownSandboxes) forget(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.labels, id)
	delete(k.configs, id)
}

// engineLabels are the labels the engine gives a container created with
// ours from an image with its own: the image's fill in the keys ours lack.
func engineLabels(ours, image map[string]string) map[string]string {
	out := maps.Clone(image)
	if out == nil {
		out = make(map[string]string, len(ours))
	}
	maps.Copy(out, ours)
	return out
}
