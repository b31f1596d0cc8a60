package docker

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

func inspect(t *testing.T, p *Provider, id string) container.InspectResponse {
	t.Helper()
	res, err := p.cli.ContainerInspect(testCtx(t), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Container
}

// The defaults, seen both from the engine and from inside the sandbox.
func TestCreateIsHardenedByDefault(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	c := inspect(t, p, id)
	hc := c.HostConfig
	// The keepers' capabilities only; every command's sets are empty (below).
	if hc.Privileged || !slices.Equal(slices.Sorted(slices.Values(hc.CapAdd)), slices.Sorted(slices.Values(keeperCaps))) || strings.Join(hc.CapDrop, ",") != "ALL" || hc.NetworkMode != "none" ||
		hc.Init == nil || *hc.Init || hc.LogConfig.Type != "none" || hc.PidsLimit == nil || *hc.PidsLimit != DefaultPidsLimit || len(hc.Binds) != 0 ||
		!strings.Contains(strings.Join(hc.SecurityOpt, ","), "no-new-privileges") || hc.ReadonlyRootfs {
		t.Fatalf("host config: %+v", hc)
	}
	for _, m := range c.Mounts {
		if m.Type != "volume" || strings.Contains(m.Source, "docker.sock") {
			t.Fatalf("unexpected mount %+v", m)
		}
	}
	status := sh(t, p, id, "grep -E '^(Cap|NoNewPrivs)' /proc/self/status")
	for _, want := range []string{"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1"} {
		if !strings.Contains(status, want) {
			t.Errorf("/proc/self/status lacks %q:\n%s", want, status)
		}
	}
	if nets := sh(t, p, id, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"); nets != "lo\n" {
		t.Errorf("network interfaces %q, want only lo", nets)
	}
	if pid1 := sh(t, p, id, "tr '\\0' ' ' < /proc/1/cmdline"); !strings.Contains(pid1, "keeper serve -stdio") {
		t.Errorf("pid 1 is %q, want the keeper serving its channel", pid1)
	}
	if pids := sh(t, p, id, "cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max"); pids != "512\n" {
		t.Errorf("pids.max %q", pids)
	}
	// Orphans are reaped: nothing is left as a zombie.
	sh(t, p, id, "(sleep 0.2 &) ; true")
	time.Sleep(500 * time.Millisecond)
	if ps := processes(t, p, id); strings.Contains(ps, " Z ") {
		t.Errorf("zombies:\n%s", ps)
	}
}

func TestCreateHonoursTheSpec(t *testing.T) {
	p, _ := newTestProvider(t)
	ctx := testCtx(t)
	net := "resident-test-" + runID
	if _, err := p.cli.NetworkCreate(ctx, net, client.NetworkCreateOptions{Labels: map[string]string{"resident-test-run": runID}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = p.cli.NetworkRemove(context.Background(), net, client.NetworkRemoveOptions{}) })
	spec := protocol.Spec{CPUs: 0.5, MemoryMB: 64, PidsLimit: 40, Network: net, Workdir: "/work", Env: map[string]string{"K": "v"}}
	id := create(t, p, testOwner(t), spec, nil)
	hc := inspect(t, p, id).HostConfig
	if hc.NanoCPUs != 5e8 || hc.Memory != 64<<20 || hc.MemorySwap != 64<<20 || *hc.PidsLimit != 40 || string(hc.NetworkMode) != net {
		t.Fatalf("host config: cpus %d mem %d swap %d pids %d net %s", hc.NanoCPUs, hc.Memory, hc.MemorySwap, *hc.PidsLimit, hc.NetworkMode)
	}
	if nets := sh(t, p, id, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort"); nets != "eth0\nlo\n" {
		t.Errorf("with a network: interfaces %q", nets)
	}
	if out := sh(t, p, id, `pwd; echo "$K"`); out != "/work\nv\n" {
		t.Errorf("workdir and env: %q", out)
	}
	for _, bad := range []protocol.Spec{{Network: "host"}, {Network: "container:" + id}, {Image: "Not/A:Valid:Ref"}, {MemoryMB: 2}, {Workdir: "rel"}, {Volumes: []protocol.VolumeMount{{Name: "x/../y", Path: "/d"}}}} {
		if bad.Image == "" {
			bad.Image = testImage
		}
		if _, err := p.Create(ctx, bad, testOwner(t), nil); protocol.KindOf(err) != protocol.KindInvalidRequest {
			t.Errorf("Create(%+v) = %v; want invalid_request", bad, err)
		}
	}
}

func TestReadOnlyRoot(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{ReadOnlyRoot: true, Workdir: "/work"}, nil)
	r := run(t, testCtx(t), p, id, provider.ExecRequest{Argv: []string{"touch", "/etc/x"}})
	if r.status.Code == 0 || !strings.Contains(r.stderr, "Read-only") {
		t.Fatalf("writing the root filesystem: %+v %q", r.status, r.stderr)
	}
	if out := sh(t, p, id, "echo a > /tmp/a && echo b > /work/b && cat /tmp/a /work/b"); out != "a\nb\n" {
		t.Fatalf("/tmp and the workdir: %q", out)
	}
	if err := p.WriteFile(testCtx(t), id, "/work/sub/f", []byte("via archive"), perm(0o600)); err != nil {
		t.Fatalf("write_file into the workdir: %v", err)
	}
	if out := sh(t, p, id, "cat /work/sub/f"); out != "via archive" {
		t.Fatalf("read back %q", out)
	}
	if err := p.WriteFile(testCtx(t), id, "/etc/f", []byte("x"), perm(0o600)); protocol.KindOf(err) != protocol.KindInvalidRequest {
		t.Fatalf("write_file onto the read-only root: %v", err)
	}
}

// An image with no shell and no sleep: the keeper keeps it up and runs
// what is there.
func TestImageWithoutShell(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{Image: noShellImage, LifetimeS: 600}, nil)
	r := run(t, testCtx(t), p, id, provider.ExecRequest{Argv: []string{"/bin/busybox", "echo", "no shell needed"}})
	if r.err != nil || r.stdout != "no shell needed\n" {
		t.Fatalf("%+v", r)
	}
	if _, err := p.Exec(testCtx(t), id, provider.ExecRequest{Argv: []string{"sh"}}); protocol.KindOf(err) != protocol.KindNotFound {
		t.Fatalf("sh in an image without one: %v; want not_found (reason no_such_file)", err)
	} else if reason, _ := protocol.ReasonOf(err); reason != protocol.ReasonNoSuchFile {
		t.Fatalf("sh in an image without one: reason %q; want no_such_file", reason)
	}
}

func TestLabelsAndOwner(t *testing.T) {
	p, _ := newTestProvider(t)
	owner := testOwner(t)
	id := create(t, p, owner, protocol.Spec{LifetimeS: 600}, map[string]string{"job": "j1"})
	labels := inspect(t, p, id).Config.Labels
	want := map[string]string{"job": "j1", owner.Key: owner.InstallID, LabelManaged: "true", LabelRole: RoleSandbox, LabelLifetime: "600"}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, labels[k], v)
		}
	}
	for _, tag := range []string{LabelManaged, owner.Key, "Evil-Install-Id"} {
		_, err := p.Create(testCtx(t), protocol.Spec{Image: testImage}, owner, map[string]string{tag: "intruder"})
		if protocol.KindOf(err) != protocol.KindInvalidRequest {
			t.Fatalf("tag %q, reserved for the resident: %v", tag, err)
		}
	}
	if list, _ := p.ListOwned(testCtx(t), owner); len(list) != 1 {
		t.Fatalf("ListOwned after the refused create: %+v", list)
	}
}

// Containers that look like ours but are not exactly ours are never
// listed, touched or removed.
func TestForeignContainersAreNeverTouched(t *testing.T) {
	p, _ := newTestProvider(t)
	owner := testOwner(t)
	ctx := testCtx(t)
	foreign := map[string]map[string]string{
		"other owner": {LabelManaged: "true", LabelRole: RoleSandbox, owner.Key: owner.InstallID + "-other"},
		"no owner":    {LabelManaged: "true", LabelRole: RoleSandbox},
		"not managed": {owner.Key: owner.InstallID},
	}
	ids := map[string]string{}
	for name, labels := range foreign {
		labels["resident-test-run"] = runID
		c, err := p.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: testImage, Cmd: []string{"sleep", "600"}, Labels: labels}})
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = c.ID
		t.Cleanup(func() {
			_, _ = p.cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
		})
	}
	if list, err := p.ListOwned(ctx, owner); err != nil || len(list) != 0 {
		t.Fatalf("ListOwned = %+v, %v", list, err)
	}
	if _, err := p.ReadOwner(ctx, ids["not managed"], owner.Key); protocol.KindOf(err) != protocol.KindNotFound {
		t.Errorf("ReadOwner(not managed) = %v", err)
	}
	if existed, err := p.Terminate(ctx, ids["not managed"]); existed || err != nil {
		t.Errorf("Terminate(not managed) = %v, %v", existed, err)
	}
	if _, err := p.cli.ContainerInspect(ctx, ids["not managed"], client.ContainerInspectOptions{}); err != nil {
		t.Errorf("the unmanaged container is gone: %v", err)
	}
	if _, err := p.Exec(ctx, ids["not managed"][:12], provider.ExecRequest{Argv: []string{"true"}}); protocol.KindOf(err) != protocol.KindNotFound {
		t.Errorf("a short id: %v", err)
	}
	if _, err := p.Exec(ctx, ids["not managed"], provider.ExecRequest{Argv: []string{"true"}}); protocol.KindOf(err) != protocol.KindNotFound {
		t.Errorf("Exec(not managed) = %v; want not_found", err)
	}
}
