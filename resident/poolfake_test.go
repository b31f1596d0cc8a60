package resident

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// poolFake is fakeProvider with a Pooler: idle members live in boxes like
// any sandbox, but ListOwned hides them until Claim.
type poolFake struct {
	*fakeProvider
	idle map[string]provider.IdleSandbox // guarded by fakeProvider.mu
	// gate, when set, holds every CreateIdle until a value is sent (the
	// value is what it returns: nil, or the error of a failed create).
	gate chan error
}

var _ provider.Pooler = (*poolFake)(nil)

func newPoolFake() *poolFake {
	return &poolFake{fakeProvider: newFake(), idle: map[string]provider.IdleSandbox{}}
}

func (f *poolFake) Info() provider.Info {
	info := f.fakeProvider.Info()
	info.Capabilities.Pool = true
	return info
}

func (f *poolFake) CreateIdle(_ context.Context, spec protocol.Spec, owner provider.Owner, tags map[string]string, mark provider.PoolMark) (string, error) {
	f.record("create_idle")
	if f.gate != nil {
		if err := <-f.gate; err != nil {
			return "", err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	id := fmt.Sprintf("fake-%d", f.n)
	all := map[string]string{owner.Key: owner.InstallID}
	for k, v := range tags {
		all[k] = v
	}
	f.boxes[id] = protocol.Sandbox{SandboxID: id, Tags: all, CreatedAt: time.Now(), State: protocol.StateRunning, Image: spec.Image}
	f.idle[id] = provider.IdleSandbox{SandboxID: id, Mark: mark, CreatedAt: time.Now(), Running: true}
	return id, nil
}

// plantIdle adds a member as a dead resident would have left it.
func (f *poolFake) plantIdle(id string, owner provider.Owner, created time.Time, mark provider.PoolMark) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.boxes[id] = protocol.Sandbox{SandboxID: id, Tags: map[string]string{owner.Key: owner.InstallID}, CreatedAt: created, State: protocol.StateRunning}
	f.idle[id] = provider.IdleSandbox{SandboxID: id, Mark: mark, CreatedAt: created, Running: true}
}

func (f *poolFake) ListIdle(_ context.Context, owner provider.Owner) ([]provider.IdleSandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []provider.IdleSandbox
	for id, m := range f.idle {
		if f.boxes[id].Tags[owner.Key] == owner.InstallID {
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *poolFake) Claim(_ context.Context, id string) error {
	f.record("claim " + id)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.idle[id]; !ok {
		return protocol.Errorf(protocol.KindNotFound, "no idle member %s", id)
	}
	delete(f.idle, id)
	return nil
}

func (f *poolFake) ListOwned(ctx context.Context, owner provider.Owner) ([]protocol.Sandbox, error) {
	all, err := f.fakeProvider.ListOwned(ctx, owner)
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []protocol.Sandbox
	for _, b := range all {
		if _, idle := f.idle[b.SandboxID]; !idle {
			out = append(out, b)
		}
	}
	return out, err
}

func (f *poolFake) Terminate(ctx context.Context, id string) (bool, error) {
	f.mu.Lock()
	delete(f.idle, id)
	f.mu.Unlock()
	return f.fakeProvider.Terminate(ctx, id)
}

func (f *poolFake) idleCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.idle)
}

func (f *poolFake) count(call string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == call {
			n++
		}
	}
	return n
}

func (f *poolFake) boxCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.boxes)
}

func (f *poolFake) callList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}
