package docker

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// inspectCounter counts the engine's answers to container inspects.
type inspectCounter struct{ n atomic.Int64 }

func (c *inspectCounter) hook(resp *http.Response) {
	if resp != nil && resp.Request != nil && resp.Request.Method == http.MethodGet &&
		strings.HasPrefix(resp.Request.URL.Path, "/v") && strings.Contains(resp.Request.URL.Path, "/containers/") &&
		strings.HasSuffix(resp.Request.URL.Path, "/json") {
		c.n.Add(1)
	}
}

// The resident checks ownership (one inspect) before every exec; the exec
// itself must not inspect the same container again.
func TestExecAfterTheOwnershipCheckDoesNotInspectAgain(t *testing.T) {
	var seen inspectCounter
	p, _ := newTestProvider(t, client.FromEnv, client.WithHTTPResponseHook(seen.hook))
	owner := testOwner(t)
	id := create(t, p, owner, protocol.Spec{}, nil)

	for _, name := range []string{"the provider that made it", "a restarted provider"} {
		if name == "a restarted provider" {
			p, _ = newTestProvider(t, client.FromEnv, client.WithHTTPResponseHook(seen.hook))
		}
		before := seen.n.Load()
		if got, err := p.ReadOwner(testCtx(t), id, owner.Key); err != nil || got != owner.InstallID {
			t.Fatalf("%s: ReadOwner = %q, %v", name, got, err)
		}
		if r := run(t, testCtx(t), p, id, provider.ExecRequest{Argv: []string{"true"}}); r.err != nil || r.status.Code != 0 {
			t.Fatalf("%s: exec = %+v", name, r)
		}
		if n := seen.n.Load() - before; n != 1 {
			t.Errorf("%s: ownership check and exec made %d container inspects; want 1", name, n)
		}
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
		k.add(fmt.Sprintf("%064x", i))
	}
	if len(k.ids) != maxKnownSandboxes {
		t.Fatalf("%d ids known; want %d", len(k.ids), maxKnownSandboxes)
	}
	k.add("the next")
	if len(k.ids) != 1 || !k.has("the next") {
		t.Errorf("after the bound the set holds %d ids", len(k.ids))
	}
	k.forget("the next")
	if k.has("the next") {
		t.Error("forget kept the id")
	}
}
