package docker

import (
	"context"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// The start sweep removes what dead residents left (a helper never
// started, long enough ago; an exited helper; a stale keeper volume and
// its image) and nothing else: not a helper another resident created a
// moment ago, not a running helper of a live resident, not a container,
// volume or image without our labels, not a stale keeper volume still
// mounted (nor, then, its image), not the current keeper.
func TestStartSweepRemovesOnlyTheDead(t *testing.T) {
	p, _ := newTestProvider(t)
	p.timing.helperStart = 2 * time.Second
	ctx := testCtx(t)
	if _, err := p.ensureHelpers(ctx); err != nil {
		t.Fatal(err)
	}
	helper := func() map[string]string {
		l := baseLabels(RoleStoreHelper)
		l["resident-test-run"] = runID
		return l
	}
	orphan := testContainer(t, p, helper(), []string{"sleep", "600"}, nil, false)
	foreign := testContainer(t, p, map[string]string{"resident-test-run": runID}, []string{"sleep", "600"}, nil, false)
	exited := testContainer(t, p, helper(), []string{"true"}, nil, true)
	live := testContainer(t, p, helper(), []string{"sleep", "600"}, nil, true)
	w := p.cli.ContainerWait(ctx, exited, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-w.Result:
	case err := <-w.Error:
		t.Fatal(err)
	}
	stale, inUse, unlabelled := keeperVolume+"00000000000000a1", keeperVolume+"00000000000000a2", keeperVolume+"00000000000000a3"
	for name, labels := range map[string]map[string]string{stale: baseLabels(RoleKeeper), inUse: baseLabels(RoleKeeper), unlabelled: {"resident-test-run": runID}} {
		testVolume(t, p, name, labels)
	}
	testContainer(t, p, map[string]string{"resident-test-run": runID}, []string{"true"}, []mount.Mount{{Type: mount.TypeVolume, Source: inUse, Target: "/k"}}, false)
	staleImage, inUseImage := keeperImage+"00000000000000a1", keeperImage+"00000000000000a2"
	for _, ref := range []string{staleImage, inUseImage} {
		if err := p.ensureHelperImage(ctx, ref, []byte("not a keeper")); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = p.cli.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true}) })
	}

	// The orphan must be older than the bound by the engine's clock, and
	// the young helper younger: await the first, then make the second.
	inspect, err := p.cli.ContainerInspect(ctx, orphan, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created, _ := time.Parse(time.RFC3339Nano, inspect.Container.Created)
	for {
		now, err := p.engineNow(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if now.Sub(created) > p.timing.helperStart+time.Second {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	young := testContainer(t, p, helper(), []string{"sleep", "600"}, nil, false)

	if err := p.sweep(ctx); err != nil {
		t.Fatal(err)
	}
	for what, id := range map[string]string{"the orphaned helper": orphan, "the exited helper": exited} {
		if _, err := p.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err == nil {
			t.Errorf("%s survived the sweep", what)
		}
	}
	for what, id := range map[string]string{"the young helper": young, "the live helper": live, "the foreign container": foreign} {
		if _, err := p.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err != nil {
			t.Errorf("%s was removed: %v", what, err)
		}
	}
	refs, _ := p.ensureHelpers(ctx)
	for name, want := range map[string]bool{stale: false, inUse: true, unlabelled: true, refs.volume: true} {
		_, err := p.cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{})
		if got := err == nil; got != want {
			t.Errorf("volume %s exists: %v, want %v", name, got, want)
		}
	}
	for ref, want := range map[string]bool{staleImage: false, inUseImage: true, refs.image: true} {
		_, err := p.cli.ImageInspect(ctx, ref)
		if got := err == nil; got != want {
			t.Errorf("image %s exists: %v, want %v", ref, got, want)
		}
	}
}

// testContainer creates (and, when start, starts) a test-image container,
// removed when the test ends.
func testContainer(t *testing.T, p *Provider, labels map[string]string, cmd []string, mounts []mount.Mount, start bool) string {
	t.Helper()
	ctx := testCtx(t)
	c, err := p.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: testImage, Cmd: cmd, Labels: labels},
		HostConfig: &container.HostConfig{NetworkMode: "none", Mounts: mounts},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = p.cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
	})
	if start {
		if _, err := p.cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return c.ID
}

func testVolume(t *testing.T, p *Provider, name string, labels map[string]string) {
	t.Helper()
	if _, err := p.cli.VolumeCreate(testCtx(t), client.VolumeCreateOptions{Name: name, Labels: labels}); err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs after the containers mounting it went.
	t.Cleanup(func() {
		_, _ = p.cli.VolumeRemove(context.Background(), name, client.VolumeRemoveOptions{Force: true})
	})
}

// ApplyAuth, the provider's start, runs the sweep: an orphaned helper goes
// without any store call.
func TestApplyAuthStartsTheSweep(t *testing.T) {
	p, _ := newTestProvider(t)
	p.timing.helperStart = 0
	l := baseLabels(RoleStoreHelper)
	l["resident-test-run"] = runID
	orphan := testContainer(t, p, l, []string{"sleep", "600"}, nil, false)
	ctx := testCtx(t)
	inspect, err := p.cli.ContainerInspect(ctx, orphan, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created, _ := time.Parse(time.RFC3339Nano, inspect.Container.Created)
	for { // older than the bound by the engine's clock, at second precision
		if now, err := p.engineNow(ctx); err != nil {
			t.Fatal(err)
		} else if now.Sub(created) > time.Second {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := p.ApplyAuth(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := p.cli.ContainerInspect(ctx, orphan, client.ContainerInspectOptions{}); err != nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatal("the orphaned helper is still there after ApplyAuth")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
