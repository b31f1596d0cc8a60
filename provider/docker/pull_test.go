package docker

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/docker/dockertest"
)

// startRegistry serves Debian's docker-registry on loopback; the engine
// treats 127.0.0.0/8 registries as insecure (plain HTTP) by default.
func startRegistry(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and no docker-registry: install the docker-registry package")
		}
		t.Skip("pull test skipped: no docker-registry (apt-get install docker-registry)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n", filepath.Join(dir, "data"), addr)
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", cfgPath)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("registry at %s did not come up: %v", addr, err)
		}
	}
}

// An image only the registry has: create pulls it, with progress.
func TestCreatePullsWithProgress(t *testing.T) {
	p, n := newTestProvider(t)
	addr := startRegistry(t)
	ctx := testCtx(t)
	ref := addr + "/resident-test/pull:" + runID

	// A fresh image (busybox plus 4 MiB of noise), pushed, then deleted
	// locally so that the pull has real layers to download.
	noise := make([]byte, 4<<20)
	_, _ = rand.Read(noise)
	busybox, _ := os.ReadFile("/usr/bin/busybox")
	layer := tarOf(tarDir("bin", 0o755), tarFile("bin/busybox", busybox, 0o755), symlinkEntry("bin/sh", "busybox"), symlinkEntry("bin/echo", "busybox"), tarFile("noise", noise, 0o644))
	if err := dockertest.ImportImage(p.cli, ref, layer); err != nil {
		t.Fatal(err)
	}
	push, err := p.cli.ImagePush(ctx, ref, client.ImagePushOptions{RegistryAuth: "e30="}) // "{}": anonymous
	if err != nil {
		t.Fatal(err)
	}
	if err := jsonStreamError(push); err != nil {
		t.Fatalf("push: %v", err)
	}
	push.Close()
	removeImage := func() {
		_, _ = p.cli.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	}
	removeImage()
	t.Cleanup(removeImage)

	id := create(t, p, testOwner(t), protocol.Spec{Image: ref}, nil)
	if r := run(t, ctx, p, id, provider.ExecRequest{Argv: []string{"echo", "pulled"}}); r.stdout != "pulled\n" {
		t.Fatalf("exec in the pulled image: %+v", r)
	}
	progress := n.pulls()
	sawBytes, sawComplete := false, false
	for _, pp := range progress {
		if pp.Image != ref {
			t.Errorf("progress for %q, want %q", pp.Image, ref)
		}
		sawBytes = sawBytes || (pp.Total > 0 && pp.Current > 0 && pp.Layer != "" && pp.Phase != "")
		sawComplete = sawComplete || (pp.Phase == protocol.PullComplete && pp.Layer != "")
	}
	if len(progress) < 3 || !sawBytes || !sawComplete {
		t.Fatalf("pull progress: %+v", progress)
	}
	t.Logf("%d pull_progress notifications, first %+v, last %+v", len(progress), progress[0], progress[len(progress)-1])

	_, err = p.Create(ctx, protocol.Spec{Image: addr + "/resident-test/missing:nope"}, testOwner(t), nil)
	if protocol.KindOf(err) != protocol.KindNotFound {
		t.Fatalf("an image the registry does not have: %v", err)
	}
	t.Logf("missing image: %v", err)
}
