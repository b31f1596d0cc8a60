package docker_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/provider/docker/dockertest"
	"github.com/resident-dev/resident/tests"
)

var (
	busyboxOnce  sync.Once
	busyboxImage string
	busyboxErr   error
)

// NeedDocker skips with one line when no engine answers at DOCKER_HOST,
// and fails instead under CI=true. It returns the busybox test image, made
// from nothing once per run.
func NeedDocker(t *testing.T) string {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err == nil {
		defer cli.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
		cancel()
	}
	if err != nil {
		msg := fmt.Sprintf("docker tests skipped: no Docker engine answers at DOCKER_HOST=%q (%v)", os.Getenv("DOCKER_HOST"), err)
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: " + msg)
		}
		t.Skip(msg)
	}
	busyboxOnce.Do(func() { busyboxImage, _, busyboxErr = dockertest.ImportBusybox(cli, dockertest.DefaultBusybox) })
	if busyboxErr != nil {
		t.Fatal(busyboxErr)
	}
	return busyboxImage
}

// SpawnDocker runs the real binary on the Docker provider of DOCKER_HOST
// (or of host, when given).
func SpawnDocker(t *testing.T, o tests.LiveOpts, host string) *tests.LiveHost {
	t.Helper()
	if host == "" {
		host = os.Getenv("DOCKER_HOST")
	}
	o.Args = append([]string{"--provider", "docker"}, o.Args...)
	o.Env = append(o.Env, "DOCKER_HOST="+host)
	return tests.SpawnLive(t, o)
}
