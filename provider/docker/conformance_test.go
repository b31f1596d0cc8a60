package docker

import (
	"testing"

	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/providertest"
)

// TestConformance runs the provider contract's suite on a real engine.
func TestConformance(t *testing.T) {
	needEngine(t)
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T) provider.Provider {
			p, _ := newTestProvider(t)
			return p
		},
		Image: testImage,
		Plant: func(t *testing.T, tags map[string]string) string {
			p, _ := newTestProvider(t)
			return plantSandbox(t, p, tags)
		},
		Volume: func(t *testing.T, owner provider.Owner, name string, files map[string]string) {
			p, _ := newTestProvider(t)
			seedVolumeAs(t, p, owner, name, files)
		},
		ForeignVolume: func(t *testing.T, name string, files map[string]string) {
			p, _ := newTestProvider(t)
			seedVolumeAs(t, p, provider.Owner{}, name, files)
		},
		NewWith: func(t *testing.T, adjust func(*provider.Config)) provider.Provider {
			p, _ := newTestProviderWith(t, adjust)
			return p
		},
	})
}
