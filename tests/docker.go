package tests

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/moby/moby/client"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/resident-dev/resident/provider/docker/dockertest"
)

// condition answers [docker]: an engine answers at DOCKER_HOST. Under
// CI=true it is always true, so a missing engine fails the script instead of
// skipping it.
func condition(cond string) (bool, error) {
	if cond != "docker" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	if os.Getenv("CI") == "true" {
		return true, nil
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return false, nil
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	return err == nil, nil
}

// cmdDockerImage makes the busybox image a Docker script runs, from nothing,
// and sets $IMAGE and $NOSHELL_IMAGE.
func cmdDockerImage(ts *testscript.TestScript, neg bool, args []string) {
	cli, err := client.New(client.FromEnv)
	ts.Check(err)
	defer cli.Close()
	busybox, noShell, err := dockertest.ImportBusybox(cli, dockertest.DefaultBusybox)
	ts.Check(err)
	ts.Setenv("IMAGE", busybox)
	ts.Setenv("NOSHELL_IMAGE", noShell)
}
