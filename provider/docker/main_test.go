package docker

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"go.uber.org/goleak"

	"github.com/resident-dev/resident/provider/docker/dockertest"
)

// engineMissing is why the Docker tests cannot run here ("" when they can).
// Locally they skip with that one line; in CI (CI=true) a missing engine
// fails the run: a green CI must mean the tests ran.
var engineMissing string

// testImage and noShellImage are built from nothing by TestMain (see
// images_test.go); runID marks everything this run creates.
var (
	testImage    string
	noShellImage string
	runID        = fmt.Sprintf("dtest-%d", time.Now().UnixNano()%1e9)
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	cli, err := client.New(client.FromEnv)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
		cancel()
	}
	if err != nil {
		engineMissing = fmt.Sprintf("docker tests skipped: no Docker engine answers at DOCKER_HOST=%q (%v)", os.Getenv("DOCKER_HOST"), err)
		fmt.Fprintln(os.Stderr, engineMissing)
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "CI=true: a missing engine is a failure, not a skip")
			return 1
		}
		return m.Run()
	}
	before, err := snapshot(cli)
	if err == nil {
		testImage, noShellImage, err = dockertest.ImportBusybox(cli, dockertest.DefaultBusybox)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "docker test setup:", err)
		return 1
	}
	code := m.Run()
	// The final sweep: whatever a test made, its cleanup must have removed.
	if left, err := leftovers(cli, before); err != nil || len(left) > 0 {
		fmt.Fprintf(os.Stderr, "docker tests left resources behind: %v %v\n", left, err)
		code = 1
	}
	cli.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}

// needEngine skips a test (with the one clear line) when no engine answers.
func needEngine(t *testing.T) {
	t.Helper()
	if engineMissing != "" {
		t.Skip(engineMissing)
	}
}
