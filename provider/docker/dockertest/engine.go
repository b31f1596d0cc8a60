// Package dockertest holds what tests and benchmarks of the Docker provider
// share: finding the engine (a skip without one, a failure under CI=true)
// and images made from nothing, for machines that reach no registry. It does
// not import the provider, so the provider's own tests use it too.
package dockertest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// Ping reports whether an engine answers at DOCKER_HOST (and the usual
// Docker environment), with the reason when none does.
func Ping() error {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	return err
}

// Required is true under CI=true, where a missing engine is a failure, not
// a skip: CI must never pass by running none of the Docker tests.
func Required() bool { return os.Getenv("CI") == "true" }

// Need returns a client of the engine at DOCKER_HOST, closed when t ends.
// Without one the test is skipped, or fails under CI=true.
func Need(t testing.TB) *client.Client {
	t.Helper()
	err := Ping()
	var cli *client.Client
	if err == nil {
		cli, err = client.New(client.FromEnv)
	}
	if err != nil {
		msg := fmt.Sprintf("docker tests skipped: no Docker engine answers at DOCKER_HOST=%q (%v)", os.Getenv("DOCKER_HOST"), err)
		if Required() {
			t.Fatal("CI=true: " + msg)
		}
		t.Skip(msg)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}
