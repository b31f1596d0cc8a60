package providertest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// runPool checks a provider.Pooler (capabilities.pool): an idle member is
// hidden from ListOwned, listed by its owner's ListIdle alone, with its
// mark, and found again by a restarted resident's provider; exactly one of
// concurrent claims wins; a claimed member is an ordinary sandbox with
// exactly the host's tags, that execs; a second claim is not_found.
func runPool(t *testing.T, h Harness) {
	e := newEnv(t, h)
	pooler, ok := e.p.(provider.Pooler)
	if !ok || !e.p.Info().Capabilities.Pool {
		t.Skip("the provider does not announce capabilities.pool")
	}
	mark := provider.PoolMark{Key: "conformance", MaxIdle: time.Hour}
	id, err := pooler.CreateIdle(ctx(t), protocol.Spec{Image: h.Image}, e.owner, map[string]string{"job": "pooled"}, mark)
	if err != nil {
		t.Fatalf("CreateIdle: %v", err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), awaitTimeout)
		defer cancel()
		_, _ = e.p.Terminate(c, id)
	})
	if owned := e.listOwned(); len(owned) != 0 {
		t.Fatalf("ListOwned shows an idle member: %+v", owned)
	}
	other := provider.Owner{Key: OwnerKey, InstallID: uniqueName("other")}
	if idle, err := pooler.ListIdle(ctx(t), other); err != nil || len(idle) != 0 {
		t.Fatalf("another install's ListIdle = %+v, %v", idle, err)
	}
	restarted := h.New(t).(provider.Pooler)
	idle, err := restarted.ListIdle(ctx(t), e.owner)
	if err != nil || len(idle) != 1 || idle[0].SandboxID != id || idle[0].Mark != mark || !idle[0].Running {
		t.Fatalf("ListIdle of a restarted provider = %+v, %v", idle, err)
	}

	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = pooler.Claim(ctx(t), id) }()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else {
			wantKind(t, "a losing claim", err, protocol.KindNotFound)
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d concurrent claims won, want exactly 1", won, len(errs))
	}
	owned := e.listOwned()
	if len(owned) != 1 || owned[0].SandboxID != id || len(owned[0].Tags) != 2 || owned[0].Tags["job"] != "pooled" {
		t.Fatalf("ListOwned after the claim = %+v", owned)
	}
	if idle, _ := pooler.ListIdle(ctx(t), e.owner); len(idle) != 0 {
		t.Fatalf("a claimed member is still idle: %+v", idle)
	}
	wantKind(t, "a second claim", pooler.Claim(ctx(t), id), protocol.KindNotFound)
	if out := e.sh(id, "", "echo ready"); strings.TrimSpace(out) != "ready" {
		t.Fatalf("exec in a claimed member: %q", out)
	}
}
