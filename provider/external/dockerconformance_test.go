package external

import (
	"os"
	"testing"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/docker/dockertest"
	"github.com/resident-dev/resident/provider/providertest"
)

// TestConformanceOverServedDocker runs the contract through the external
// protocol with the Docker provider behind it: a Go provider served the
// way any external one is, on the real engine.
func TestConformanceOverServedDocker(t *testing.T) {
	image := engineImage(t)
	state := t.TempDir()
	open := func(t *testing.T) provider.Provider { return served(t, "docker", state, nil) }
	providertest.Run(t, providertest.Harness{
		New:   open,
		Image: image,
		NewWith: func(t *testing.T, adjust func(*provider.Config)) provider.Provider {
			return served(t, "docker", state, adjust)
		},
		// Seeded the way a host would: a sandbox of owner mounting the
		// volume, so its labels are the provider's own.
		Volume: func(t *testing.T, owner provider.Owner, name string, files map[string]string) {
			providertest.SeedThroughSandbox(t, open(t), image, owner, name, files)
		},
	})
}

// engineImage needs the real engine (a failure under CI, a skip elsewhere)
// and makes the busybox image the suite runs, from nothing. What the test
// leaves on the engine (volumes seeded through sandboxes) is removed at its
// end, so a later package's sweep finds nothing of it.
func engineImage(t testing.TB) string {
	t.Helper()
	if os.Getenv("DOCKER_HOST") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but DOCKER_HOST is not set")
		}
		t.Skip("no Docker engine (set DOCKER_HOST)")
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	dockertest.RemoveNewAtCleanup(t, cli, dockertest.OwnerIn(providertest.MadeBySuite))
	image, _, err := dockertest.ImportBusybox(cli, dockertest.DefaultBusybox)
	if err != nil {
		t.Fatal(err)
	}
	return image
}
