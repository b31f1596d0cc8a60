package tests

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/provider/docker/dockertest"
)

var (
	busyboxOnce  sync.Once
	busyboxImage string
	busyboxErr   error
)

// needDocker skips with one line when no engine answers at DOCKER_HOST,
// and fails instead under CI=true. It returns the busybox test image, made
// from nothing once per run.
func needDocker(t *testing.T) string {
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

// spawnDocker runs the real binary on the Docker provider of DOCKER_HOST
// (or of host, when given).
func spawnDocker(t *testing.T, o liveOpts, host string) *liveHost {
	t.Helper()
	if host == "" {
		host = os.Getenv("DOCKER_HOST")
	}
	o.args = append([]string{"--provider", "docker"}, o.args...)
	o.env = append(o.env, "DOCKER_HOST="+host)
	return spawnLive(t, o)
}

func uniqueInstall(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1e9)
}
