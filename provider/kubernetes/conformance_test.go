package kubernetes

import (
	"testing"

	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/providertest"
)

// TestConformance runs the provider contract's suite on the real cluster.
func TestConformance(t *testing.T) {
	needCluster(t)
	providertest.Run(t, providertest.Harness{
		New:   func(t *testing.T) provider.Provider { return newTestProvider(t) },
		Image: cluster.Image,
		NewWith: func(t *testing.T, adjust func(*provider.Config)) provider.Provider {
			return newTestProviderWith(t, adjust)
		},
		Isolated: true,
	})
}
