package docker

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"go.uber.org/zap/zaptest"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// notes records the notifications a provider sent.
type notes struct {
	mu   sync.Mutex
	list []any
}

func (n *notes) add(method string, params any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if method == protocol.NotifyPullProgress {
		n.list = append(n.list, params)
	}
}

func (n *notes) pulls() []protocol.PullProgress {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []protocol.PullProgress
	for _, v := range n.list {
		out = append(out, v.(protocol.PullProgress))
	}
	return out
}

// newTestProvider builds a provider on the test engine (or on host, when
// given: a proxy in front of it) and closes it at the end of the test.
func newTestProvider(t *testing.T, opts ...client.Opt) (*Provider, *notes) {
	t.Helper()
	return newTestProviderWith(t, nil, opts...)
}

// newTestProviderWith is newTestProvider with the config adjust changes.
func newTestProviderWith(t *testing.T, adjust func(*provider.Config), opts ...client.Opt) (*Provider, *notes) {
	t.Helper()
	needEngine(t)
	n := &notes{}
	if len(opts) == 0 {
		opts = []client.Opt{client.FromEnv}
	}
	cfg := provider.Config{Logger: zaptest.NewLogger(t), Notify: n.add}
	if adjust != nil {
		adjust(&cfg)
	}
	p, err := newProvider(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, n
}

// newExecModeProvider is a provider whose sandboxes take the docker exec
// path (exec=exec), as an older resident's do.
func newExecModeProvider(t *testing.T) *Provider {
	t.Helper()
	p, _ := newTestProviderWith(t, func(cfg *provider.Config) {
		cfg.Options = provider.NewOptions(map[string]string{OptExec.Name: ExecModeExec})
	})
	return p
}

// testOwner is an install of its own per test, marked with the run id.
func testOwner(t *testing.T) provider.Owner {
	name := strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())
	return provider.Owner{Key: "resident-install-id", InstallID: runID + "-" + name[:min(len(name), 40)]}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// create makes a sandbox and registers its termination at once.
func create(t *testing.T, p *Provider, owner provider.Owner, spec protocol.Spec, tags map[string]string) string {
	t.Helper()
	if spec.Image == "" {
		spec.Image = testImage
	}
	id, err := p.Create(testCtx(t), spec, owner, tags)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		if _, err := p.Terminate(context.Background(), id); err != nil {
			t.Errorf("cleanup Terminate: %v", err)
		}
	})
	return id
}

// result is a finished exec.
type result struct {
	stdout, stderr string
	status         provider.ExitStatus
	err            error
}

// run execs to completion, reading both streams as the resident does.
func run(t *testing.T, ctx context.Context, p *Provider, id string, req provider.ExecRequest) result {
	t.Helper()
	proc, err := p.Exec(ctx, id, req)
	if err != nil {
		t.Fatalf("Exec(%q): %v", req.Argv, err)
	}
	return collect(proc)
}

func collect(proc provider.Process) result {
	var out, errOut bytes.Buffer
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = out.ReadFrom(proc.Stdout()) })
	wg.Go(func() { _, _ = errOut.ReadFrom(proc.Stderr()) })
	st, err := proc.Wait()
	wg.Wait()
	return result{out.String(), errOut.String(), st, err}
}

// sh runs a script and fails the test unless it exits 0.
func sh(t *testing.T, p *Provider, id, script string) string {
	t.Helper()
	r := run(t, testCtx(t), p, id, provider.ExecRequest{Argv: []string{"sh", "-c", script}})
	if r.err != nil || r.status.Code != 0 {
		t.Fatalf("sh -c %q: %+v %v; stderr %q", script, r.status, r.err, r.stderr)
	}
	return r.stdout
}

// seedVolume makes a store volume holding files, through a container that
// is created but never started (the archive API reaches its volumes).
func seedVolume(t *testing.T, p *Provider, name string, files map[string]string) {
	t.Helper()
	seedVolumeAs(t, p, testOwner(t), name, files)
}

// seedVolumeAs is seedVolume for a volume owner made; a zero owner makes
// one the resident did not create (no labels of ours).
func seedVolumeAs(t *testing.T, p *Provider, owner provider.Owner, name string, files map[string]string) {
	t.Helper()
	ctx := testCtx(t)
	if owner.InstallID == "" {
		if _, err := p.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Labels: map[string]string{"resident-test-run": runID}}); err != nil {
			t.Fatal(err)
		}
	} else if _, err := p.ensureStoreVolume(ctx, name, owner); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A store helper that served the test's last read may still be on
		// its way out (it exits when its request ends, and the engine
		// removes it after): "in use" for a while is that, for good a leak.
		var err error
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			_, err = p.cli.VolumeRemove(context.Background(), name, client.VolumeRemoveOptions{Force: true})
			if err == nil || !strings.Contains(err.Error(), "in use") || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Errorf("cleanup volume %s: %v", name, err)
		}
	})
	c, err := p.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: testImage, Cmd: []string{"/bin/true"}, Labels: map[string]string{"resident-test-run": runID}},
		HostConfig: &container.HostConfig{NetworkMode: "none", Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: name, Target: "/v"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
	var entries []tarEntry
	dirs := map[string]bool{}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		parts := strings.Split(n, "/")
		for i := 1; i < len(parts); i++ {
			if d := strings.Join(parts[:i], "/"); !dirs[d] {
				dirs[d] = true
				entries = append(entries, tarDir(d, 0o755))
			}
		}
		entries = append(entries, tarFile(n, []byte(files[n]), 0o644))
	}
	if _, err := p.cli.CopyToContainer(ctx, c.ID, client.CopyToContainerOptions{DestinationPath: "/v", Content: bytes.NewReader(tarOf(entries...))}); err != nil {
		t.Fatal(err)
	}
}
