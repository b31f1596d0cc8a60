package docker_test

import (
	"os"
	"testing"

	"github.com/resident-dev/resident/tests"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "resident-docker-tests-")
	if err != nil {
		panic(err)
	}
	tests.ResidentBin, err = tests.BuildResident(dir, "../../cmd/resident")
	if err != nil {
		panic(err)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// TestSessions runs the sessions only Docker has (testdata/script) on the
// engine at DOCKER_HOST: skipped without one, failed under CI=true.
func TestSessions(t *testing.T) {
	tests.RunScripts(t, "testdata/script", tests.ResidentBin, "docker")
}
