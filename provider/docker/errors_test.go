package docker

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

func TestKindOfEngineErrors(t *testing.T) {
	cases := map[error]protocol.Kind{
		cerrdefs.ErrNotFound:                  protocol.KindNotFound,
		cerrdefs.ErrConflict:                  protocol.KindConflict,
		cerrdefs.ErrAlreadyExists:             protocol.KindConflict,
		cerrdefs.ErrInvalidArgument:           protocol.KindInvalidRequest,
		cerrdefs.ErrUnauthenticated:           protocol.KindUnauthorized,
		cerrdefs.ErrPermissionDenied:          protocol.KindUnauthorized,
		cerrdefs.ErrResourceExhausted:         protocol.KindQuota,
		cerrdefs.ErrUnavailable:               protocol.KindTransient,
		cerrdefs.ErrInternal:                  protocol.KindTransient,
		errors.New("something else entirely"): protocol.KindTransient,
	}
	for err, want := range cases {
		if got := protocol.KindOf(classify(context.Background(), "op", fmt.Errorf("wrapped: %w", err))); got != want {
			t.Errorf("%v: kind %s, want %s", err, got, want)
		}
	}
	// The caller's own deadline stays a timeout; the provider's bound on
	// a hung engine is transient.
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	if k := protocol.KindOf(classify(ctx, "op", ctx.Err())); k != protocol.KindTimeout {
		t.Errorf("caller deadline: %s", k)
	}
	ctx2, cancel2 := context.WithTimeoutCause(context.Background(), 0, errEngineTimeout)
	defer cancel2()
	if k := protocol.KindOf(classify(ctx2, "op", ctx2.Err())); k != protocol.KindTransient {
		t.Errorf("engine bound: %s", k)
	}
}

func TestNoEngineIsTransient(t *testing.T) {
	needEngine(t)
	p, _ := newTestProvider(t, client.WithHost("unix:///nonexistent/resident-test.sock"))
	start := time.Now()
	_, err := p.ListOwned(testCtx(t), testOwner(t))
	if protocol.KindOf(err) != protocol.KindTransient || time.Since(start) > 5*time.Second {
		t.Fatalf("ListOwned with no engine: %v (kind %s) after %s", err, protocol.KindOf(err), time.Since(start))
	}
}

func TestHungEngineIsTransientWithinTheBound(t *testing.T) {
	px := startProxy(t)
	p, _ := newTestProvider(t, px.host())
	p.timing.api = 2 * time.Second
	px.setFrozen(true)
	start := time.Now()
	_, err := p.ListOwned(testCtx(t), testOwner(t))
	took := time.Since(start)
	// Well under the default 30s bound, generous over the 2s one: this
	// machine may be loaded.
	if protocol.KindOf(err) != protocol.KindTransient || took > 15*time.Second {
		t.Fatalf("ListOwned on a hung engine: %v (kind %s) after %s; want transient within ~2s", err, protocol.KindOf(err), took)
	}
	t.Logf("hung engine: transient after %s", took.Round(time.Millisecond))
	px.setFrozen(false)
	if _, err := p.ListOwned(testCtx(t), testOwner(t)); err != nil {
		t.Fatalf("ListOwned once the engine answers again: %v", err)
	}
}

// An engine that goes away, or hangs, mid-exec: Wait reports transient
// within engineGrace, and the same provider works once the engine is back.
func TestEngineLostMidExec(t *testing.T) {
	for _, mode := range []string{"down", "frozen"} {
		t.Run(mode, func(t *testing.T) {
			px := startProxy(t)
			p, _ := newTestProvider(t, px.host())
			p.timing.api, p.timing.engineGrace = 2*time.Second, 3*time.Second
			// The sandbox comes from a provider with the usual bounds: on a
			// loaded machine a create can take longer than the 2s that
			// keeps this test short, and the create is not what it tests.
			creator, _ := newTestProvider(t)
			id := create(t, creator, testOwner(t), protocol.Spec{}, nil)
			proc, err := p.Exec(testCtx(t), id, provider.ExecRequest{Argv: []string{"sh", "-c", "echo up; sleep 60"}})
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 3)
			if _, err := proc.Stdout().Read(buf); err != nil {
				t.Fatal(err)
			}
			lost := time.Now()
			if mode == "down" {
				px.down()
			} else {
				px.setFrozen(true)
			}
			r := collect(proc)
			took := time.Since(lost)
			if protocol.KindOf(r.err) != protocol.KindTransient || took > 12*time.Second { // the default grace is 15s
				t.Fatalf("Wait with the engine %s: %+v, %v after %s; want transient within ~3s", mode, r.status, r.err, took)
			}
			t.Logf("engine %s mid-exec: %v after %s", mode, r.err, took.Round(time.Millisecond))
			if mode == "down" {
				px.up()
			} else {
				px.setFrozen(false)
			}
			if out := sh(t, p, id, "echo back"); out != "back\n" {
				t.Fatalf("exec after the engine came back: %q", out)
			}
		})
	}
}

func TestUnauthorizedFiresTheHook(t *testing.T) {
	needEngine(t)
	p, _ := newTestProvider(t, unauthorizedEngine(t))
	var fired atomic.Int32
	var reason atomic.Value
	p.OnUnauthorized(func(r string) { fired.Add(1); reason.Store(r) })
	_, err := p.ListOwned(testCtx(t), testOwner(t))
	if protocol.KindOf(err) != protocol.KindUnauthorized {
		t.Fatalf("ListOwned behind a 401 proxy: %v (kind %s)", err, protocol.KindOf(err))
	}
	if fired.Load() == 0 {
		t.Fatal("the unauthorized hook did not fire")
	}
	t.Logf("hook fired %d times: %v", fired.Load(), reason.Load())
}
