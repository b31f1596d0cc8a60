package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/provider/docker/dockertest"
)

// dockerImage skips without an engine at DOCKER_HOST (fails under CI=true)
// and returns the busybox test image, made from nothing.
func dockerImage(t *testing.T) string {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err == nil {
		defer cli.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
		cancel()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: no Docker engine: %v", err)
		}
		t.Skipf("no Docker engine at DOCKER_HOST: %v", err)
	}
	image, _, err := dockertest.ImportBusybox(cli, dockertest.DefaultBusybox)
	if err != nil {
		t.Fatal(err)
	}
	return image
}

// build streams a directory to the engine's builder through the resident:
// the progress reaches stderr, the image runs as build:TAG, the same
// directory again is a cache hit, and a failing step is named.
func TestBuildOnDocker(t *testing.T) {
	image := dockerImage(t)
	state, dir := t.TempDir(), t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Dockerfile", "FROM "+image+"\nCOPY greeting /greeting\n")
	// Unique per run: the install id is the test's name, and an earlier
	// run's build of the same bytes would be a cache hit.
	greeting := fmt.Sprintf("hello from the context %d\n", time.Now().UnixNano())
	write("greeting", greeting)
	docker := []string{"--provider", "docker"}
	r := ctl(t, state, nil, append(docker, "build", "ctl-t1", dir)...)
	r.want(t, 0, "build:ctl-t1\n")
	if !strings.Contains(string(r.stderr), "Step 2/") {
		t.Fatalf("no build progress on stderr:\n%s", r.stderr)
	}
	ctl(t, state, nil, append(docker, "run", "--image", "build:ctl-t1", "--", "cat", "/greeting")...).want(t, 0, greeting)
	again := ctl(t, state, nil, append(docker, "build", "ctl-t2", dir)...)
	again.want(t, 0, "build:ctl-t2\n")
	if !strings.Contains(string(again.stderr), "reused") {
		t.Fatalf("the same directory again was not a cache hit:\n%s", again.stderr)
	}
	write("Dockerfile", "FROM "+image+"\nRUN exit 4\n")
	failed := ctl(t, state, nil, append(docker, "build", "ctl-t3", dir)...)
	if failed.code != exitFailure || !strings.Contains(string(failed.stderr), "step 2/") || !strings.Contains(string(failed.stderr), "invalid_request") {
		t.Fatalf("a failing step: exit %d, stderr:\n%s", failed.code, failed.stderr)
	}
}
