package tests

import (
	"fmt"

	"github.com/moby/moby/client"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/resident-dev/resident/provider/docker/dockertest"
)

// condition answers [NAME] for a provider name: true when the session runs
// on that provider.
func condition(provider, cond string) (bool, error) {
	switch cond {
	case "local", "docker":
		return cond == provider, nil
	}
	return false, fmt.Errorf("unknown condition %q (the conditions are provider names: local, docker)", cond)
}

// cmdDockerImage makes the busybox images a Docker script runs, from
// nothing, and sets $IMAGE and $NOSHELL_IMAGE.
func cmdDockerImage(ts *testscript.TestScript, neg bool, args []string) {
	cli, err := client.New(client.FromEnv)
	ts.Check(err)
	defer cli.Close()
	busybox, noShell, err := dockertest.Images(cli)
	ts.Check(err)
	ts.Setenv("IMAGE", busybox)
	ts.Setenv("NOSHELL_IMAGE", noShell)
}
