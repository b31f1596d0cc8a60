package docker

import (
	"testing"

	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/providertest"
)

// TestConformance runs the provider contract's suite on a real engine,
// over the keeper channel (the default exec mode).
func TestConformance(t *testing.T) {
	needEngine(t)
	providertest.Run(t, conformanceHarness(nil))
}

// TestConformanceExecFallback runs the same suite with exec=exec: every
// sandbox on the docker exec path, as an older resident's sandboxes and a
// fallback's are.
func TestConformanceExecFallback(t *testing.T) {
	needEngine(t)
	providertest.Run(t, conformanceHarness(map[string]string{OptExec.Name: ExecModeExec}))
}

// TestConformanceForwardChannel runs the suite's network cases with
// forward=channel: a sandbox's connections as the keeper channel's streams
// even where the resident could dial inside the container's namespace (the
// default path of a root resident beside its engine), as they go to a
// remote engine. The option changes nothing else, so the rest of the suite
// would only repeat TestConformance.
func TestConformanceForwardChannel(t *testing.T) {
	needEngine(t)
	providertest.RunNet(t, conformanceHarness(map[string]string{OptForward.Name: ForwardChannel}))
}

// conformanceHarness makes every provider instance with opts.
func conformanceHarness(opts map[string]string) providertest.Harness {
	withOpts := func(adjust func(*provider.Config)) func(*provider.Config) {
		return func(cfg *provider.Config) {
			cfg.Options = provider.NewOptions(opts)
			if adjust != nil {
				adjust(cfg)
			}
		}
	}
	newP := func(t *testing.T) *Provider {
		p, _ := newTestProviderWith(t, withOpts(nil))
		return p
	}
	return providertest.Harness{
		New:   func(t *testing.T) provider.Provider { return newP(t) },
		Image: testImage,
		Plant: func(t *testing.T, tags map[string]string) string {
			return plantSandbox(t, newP(t), tags)
		},
		Volume: func(t *testing.T, owner provider.Owner, name string, files map[string]string) {
			seedVolumeAs(t, newP(t), owner, name, files)
		},
		ForeignVolume: func(t *testing.T, name string, files map[string]string) {
			seedVolumeAs(t, newP(t), provider.Owner{}, name, files)
		},
		NewWith: func(t *testing.T, adjust func(*provider.Config)) provider.Provider {
			p, _ := newTestProviderWith(t, withOpts(adjust))
			return p
		},
	}
}
