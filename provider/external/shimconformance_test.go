package external

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/providertest"
)

// TestConformanceOverThePythonDockerShim runs the contract against the
// reference shim of the original ByocProvider contract (python3-docker),
// served by the Python bridge as a real child process, on the real engine.
func TestConformanceOverThePythonDockerShim(t *testing.T) {
	image := engineImage(t)
	python := "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import docker").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s cannot import docker (python3-docker): %v", python, err)
		}
		t.Skip("no python3-docker")
	}
	_, self, _, _ := runtime.Caller(0)
	pyDir := filepath.Join(filepath.Dir(self), "..", "..", "python")
	t.Setenv("PYTHONPATH", pyDir)
	t.Setenv("DOCKER_SHIM_OWNER_KEY", providertest.OwnerKey)
	open := func(t *testing.T) provider.Provider {
		p, err := New(provider.Config{Args: []string{python, "-m", "resident_shim",
			filepath.Join(pyDir, "examples", "docker_shim", "provider.py"), "--owner-key", providertest.OwnerKey}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		return p
	}
	providertest.Run(t, providertest.Harness{
		New:               open,
		Image:             image,
		StartFailuresExit: true,
		Volume: func(t *testing.T, owner provider.Owner, name string, files map[string]string) {
			providertest.SeedThroughSandbox(t, open(t), image, owner, name, files)
		},
	})
}
