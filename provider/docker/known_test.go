package docker

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// inspectCounter counts the engine's answers to container inspects
// (GET /v1.NN/containers/<full id>/json; a list is /containers/json).
type inspectCounter struct{ n atomic.Int64 }

var containerInspectPath = regexp.MustCompile(`^/v[0-9.]+/containers/[0-9a-f]{64}/json$`)

func (c *inspectCounter) hook(resp *http.Response) {
	if resp != nil && resp.Request != nil && resp.Request.Method == http.MethodGet && containerInspectPath.MatchString(resp.Request.URL.Path) {
		c.n.Add(1)
	}
}

// The resident checks ownership before every exec. A provider remembers
// the owner of a sandbox it created, and one that restarted remembers it
// after one inspect; the exec itself never inspects again.
func TestOwnershipAndExecInspectAtMostOnce(t *testing.T) {
	var seen inspectCounter
	p, _ := newTestProvider(t, client.FromEnv, client.WithHTTPResponseHook(seen.hook))
	owner := testOwner(t)
	id := create(t, p, owner, protocol.Spec{}, nil)

	for _, c := range []struct {
		name     string
		inspects int64
	}{{"the provider that made it", 0}, {"a restarted provider", 1}} {
		if c.name == "a restarted provider" {
			p, _ = newTestProvider(t, client.FromEnv, client.WithHTTPResponseHook(seen.hook))
			if _, known := p.KnownOwner(id, owner.Key); known {
				t.Fatal("a new provider claims to know the sandbox")
			}
		}
		before := seen.n.Load()
		got, known := p.KnownOwner(id, owner.Key)
		if !known {
			if got, err := p.ReadOwner(testCtx(t), id, owner.Key); err != nil || got != owner.InstallID {
				t.Fatalf("%s: ReadOwner = %q, %v", c.name, got, err)
			}
			got, known = p.KnownOwner(id, owner.Key)
		}
		if !known || got != owner.InstallID {
			t.Fatalf("%s: KnownOwner = %q, %v", c.name, got, known)
		}
		if r := run(t, testCtx(t), p, id, provider.ExecRequest{Argv: []string{"true"}}); r.err != nil || r.status.Code != 0 {
			t.Fatalf("%s: exec = %+v", c.name, r)
		}
		if n := seen.n.Load() - before; n != c.inspects {
			t.Errorf("%s: the ownership check and the exec made %d container inspects; want %d", c.name, n, c.inspects)
		}
	}
}

// What a provider remembers of a sandbox it created is what the engine
// holds, image labels included: the image's fill in only the keys ours lack,
// so an image cannot claim a sandbox for another owner.
func TestKnownLabelsAreTheEngines(t *testing.T) {
	p, _ := newTestProvider(t)
	ctx := testCtx(t)
	owner := testOwner(t)
	base, err := p.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: testImage, Cmd: []string{"true"}, Labels: map[string]string{"resident-test-run": runID}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.cli.ContainerRemove(context.Background(), base.ID, client.ContainerRemoveOptions{Force: true})
	image := "resident-test/labelled:" + runID
	changes := []string{"LABEL " + owner.Key + "=intruder", "LABEL from-the-image=yes"}
	if _, err := p.cli.ContainerCommit(ctx, base.ID, client.ContainerCommitOptions{Reference: image, Changes: changes}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = p.cli.ImageRemove(context.Background(), image, client.ImageRemoveOptions{Force: true})
	})
	id := create(t, p, owner, protocol.Spec{Image: image}, map[string]string{"job": "j1"})
	ins, err := p.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range ins.Container.Config.Labels {
		if got, known := p.known.label(id, key); !known || got != want {
			t.Errorf("label %s: remembered %q (known %v); the engine holds %q", key, got, known, want)
		}
	}
	if got, _ := p.KnownOwner(id, owner.Key); got != owner.InstallID {
		t.Errorf("owner remembered as %q", got)
	}
	if got, _ := p.known.label(id, "from-the-image"); got != "yes" {
		t.Errorf("the image's own label remembered as %q", got)
	}
}

func TestExecInAPausedSandboxIsConflict(t *testing.T) {
	p, _ := newTestProvider(t)
	ctx := testCtx(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	if _, err := p.cli.ContainerPause(ctx, id, client.ContainerPauseOptions{}); err != nil {
		t.Skipf("this engine cannot pause a container: %v", err)
	}
	_, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"true"}})
	if protocol.KindOf(err) != protocol.KindConflict || !strings.Contains(err.Error(), "paused") {
		t.Errorf("exec in a paused sandbox: %v; want conflict saying it is paused", err)
	}
	if _, err := p.cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := run(t, ctx, p, id, provider.ExecRequest{Argv: []string{"true"}}); r.err != nil || r.status.Code != 0 {
		t.Errorf("exec once unpaused = %+v", r)
	}
}

// A sandbox the provider knows, removed behind its back (docker rm, another
// resident), is not_found, as one it never saw.
func TestExecInASandboxRemovedElsewhereIsNotFound(t *testing.T) {
	p, _ := newTestProvider(t)
	ctx := testCtx(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	if _, err := p.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
		t.Fatal(err)
	}
	_, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"true"}})
	if protocol.KindOf(err) != protocol.KindNotFound || err.Error() != notFound(id).Error() {
		t.Errorf("exec in a removed sandbox: %v; want %v", err, notFound(id))
	}
	if p.known.has(id) {
		t.Error("the provider still counts the removed sandbox as known")
	}
}

func TestKnownSandboxesStartOverWhenFull(t *testing.T) {
	var k knownSandboxes
	for i := range maxKnownSandboxes {
		k.add(fmt.Sprintf("%064x", i), nil)
	}
	if len(k.labels) != maxKnownSandboxes {
		t.Fatalf("%d ids known; want %d", len(k.labels), maxKnownSandboxes)
	}
	k.add("the next", nil)
	if len(k.labels) != 1 || !k.has("the next") {
		t.Errorf("after the bound the set holds %d ids", len(k.labels))
	}
	k.forget("the next")
	if k.has("the next") {
		t.Error("forget kept the id")
	}
	k.add("huge", map[string]string{"from-the-image": strings.Repeat("x", maxKnownLabelBytes)})
	if k.has("huge") {
		t.Error("a sandbox with more label bytes than the bound was remembered")
	}
}
