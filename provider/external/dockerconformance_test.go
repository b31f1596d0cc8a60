package external

import (
	"context"
	"io"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/docker"
	"github.com/resident-dev/resident/provider/providertest"
)

// TestConformanceOverServedDocker runs the contract through the external
// protocol with the Docker provider behind it: a Go provider served the
// way any external one is, on the real engine.
func TestConformanceOverServedDocker(t *testing.T) {
	if os.Getenv("DOCKER_HOST") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but DOCKER_HOST is not set")
		}
		t.Skip("no Docker engine (set DOCKER_HOST)")
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	image, _, err := docker.ImportBusybox(cli, docker.DefaultBusybox)
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	open := func(t *testing.T) provider.Provider { return served(t, "docker", state, nil) }
	providertest.Run(t, providertest.Harness{
		New:   open,
		Image: image,
		NewWith: func(t *testing.T, adjust func(*provider.Config)) provider.Provider {
			return served(t, "docker", state, adjust)
		},
		// Seeded the way a host would: a sandbox of owner mounting the
		// volume, so its labels are the provider's own.
		Volume: func(t *testing.T, owner provider.Owner, name string, files map[string]string) {
			seedThroughSandbox(t, open(t), image, owner, name, files)
		},
	})
}

func seedThroughSandbox(t *testing.T, p provider.Provider, image string, owner provider.Owner, volume string, files map[string]string) {
	t.Helper()
	ctx := context.Background()
	id, err := p.Create(ctx, protocol.Spec{Image: image, Volumes: []protocol.VolumeMount{{Name: volume, Path: "/seed"}}}, owner, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = p.Terminate(ctx, id) }()
	for rel, content := range files {
		target := path.Join("/seed", rel)
		proc, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"sh", "-c", `mkdir -p "$(dirname "$1")" && cat > "$1"`, "sh", target}, Stdin: true})
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = strings.NewReader(content).WriteTo(proc.Stdin()); _ = proc.Stdin().Close() }()
		go drain(proc)
		if st, err := proc.Wait(); err != nil || st.Code != 0 {
			t.Fatalf("seeding %s: %v %+v", rel, err, st)
		}
	}
}

// drain reads both streams at once, so neither can fill and block the other.
func drain(proc provider.Process) {
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, proc.Stderr()); close(done) }()
	_, _ = io.Copy(io.Discard, proc.Stdout())
	<-done
}
