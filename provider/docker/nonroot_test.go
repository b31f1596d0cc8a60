package docker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// nonRootImage is the test image with USER nobody, committed from a
// container that is never started; the test removes both.
func nonRootImage(t *testing.T, p *Provider) string {
	t.Helper()
	ctx := testCtx(t)
	c, err := p.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: testImage, Cmd: []string{"/bin/true"}, Labels: map[string]string{"resident-test-run": runID}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
	ref := "resident-test/nonroot:" + strings.ToLower(runID)
	if _, err := p.cli.ContainerCommit(ctx, c.ID, client.ContainerCommitOptions{Reference: ref, Changes: []string{"USER 65534"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = p.cli.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true})
	})
	return ref
}

// An image whose USER is not root gives the keeper no capability to
// protect itself with: execs run as that user, and are killed as the
// keeper's tree, as before; exclusive is refused, not silently weaker.
func TestANonRootSandboxRunsAndKillsAsBefore(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{Image: nonRootImage(t, p)}, nil)
	if out := sh(t, p, id, "id -u; grep ^CapEff /proc/self/status"); out != "65534\nCapEff:\t0000000000000000\n" {
		t.Fatalf("a non-root sandbox's exec: %q", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r := run(t, ctx, p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "setsid sleep 1017 & sleep 1018"}})
	if r.err != nil || r.status.Code != 137 {
		t.Fatalf("timed-out exec: %+v %v", r.status, r.err)
	}
	if left := escapedSleeps(t, p, id); left != "" {
		t.Fatalf("the timed-out exec survives: %s", left)
	}
	_, err := p.Exec(testCtx(t), id, provider.ExecRequest{Argv: []string{"true"}, Exclusive: true})
	if protocol.KindOf(err) != protocol.KindInvalidRequest {
		t.Fatalf("exclusive in a non-root sandbox: %v", err)
	}
}

// A keeper that runs unprotected refuses to end its sandbox (it could not
// be sure of killing everything): terminate falls back to the engine's
// stop, says so in the log, and the sandbox is stopped all the same.
func TestANonRootSandboxIsTerminatedByTheEngine(t *testing.T) {
	p, _ := newTestProvider(t)
	core, logs := observer.New(zap.InfoLevel)
	p.log = zap.New(core)
	id := create(t, p, testOwner(t), protocol.Spec{Image: nonRootImage(t, p)}, nil)
	sh(t, p, id, "sleep 1000 >/dev/null 2>&1 &")
	if existed, err := p.Terminate(testCtx(t), id); !existed || err != nil {
		t.Fatalf("Terminate = %v, %v", existed, err)
	}
	if logs.FilterMessageSnippet("did not end it; stopping it through the engine").Len() != 1 {
		t.Fatalf("the keeper's refusal is not in the log: %v", logs.All())
	}
	if c, err := p.cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{}); err == nil && c.Container.State.Running {
		t.Fatal("the sandbox still runs after terminate answered")
	}
	awaitRemoved(t, p, id)
}
