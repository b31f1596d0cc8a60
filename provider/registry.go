package provider

import (
	"fmt"
	"slices"
	"sort"
	"sync"
)

// Factory builds a provider. It must not start background work or touch the
// backend before it is called; registering is free.
type Factory func(cfg Config) (Provider, error)

type registration struct {
	factory Factory
	summary string
	options []OptionSpec
}

var (
	registryMu sync.RWMutex
	registry   = map[string]registration{}
)

// Register makes a provider available by name, with the options it takes
// (Config.Options; none for most). It panics on a duplicate or empty name,
// or an option declared twice, as database/sql does, because that is a
// programming error.
func Register(name, summary string, factory Factory, options ...OptionSpec) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if name == "" || factory == nil {
		panic("provider: Register with an empty name or nil factory")
	}
	if _, dup := registry[name]; dup {
		panic("provider: Register called twice for " + name)
	}
	seen := map[string]bool{}
	for _, opt := range options {
		if opt.OptionName() == "" || seen[opt.OptionName()] {
			panic("provider: Register " + name + " with an empty or repeated option name")
		}
		seen[opt.OptionName()] = true
	}
	registry[name] = registration{factory: factory, summary: summary, options: options}
}

// Open builds the provider registered under name.
func Open(name string, cfg Config) (Provider, error) {
	registryMu.RLock()
	reg, ok := registry[name]
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown provider %q (known: %v; forgotten import?)", name, Names())
	}
	if err := checkOptions(name, reg.options, cfg.Options); err != nil {
		return nil, fmt.Errorf("provider %s: %w", name, err)
	}
	p, err := reg.factory(cfg)
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", name, err)
	}
	return p, nil
}

// Names lists the registered providers, sorted.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for name := range registry {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Summary is the one-line description of a registered provider.
func Summary(name string) string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return registry[name].summary
}

// OptionsOf lists the options a registered provider takes, in the order it
// declared them.
func OptionsOf(name string) []OptionSpec {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return slices.Clone(registry[name].options)
}
