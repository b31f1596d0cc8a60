package resident

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
)

// cancelled is a context that is already over: acquire with it succeeds only
// when there is room at once, so a test can tell "would wait" apart from
// "goes through" without timing anything.
func cancelled() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("would wait"))
	return ctx
}

func TestBudgetAcquireWaitsForRoomAndReleaseFreesIt(t *testing.T) {
	b := newHostBudget(100, 40)
	first, err := b.acquire(cancelled(), 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.acquire(cancelled(), 41); err == nil {
		t.Fatal("41 bytes acquired with only 40 free")
	}
	second, err := b.acquire(cancelled(), 40)
	if err != nil {
		t.Fatalf("40 bytes with 40 free: %v", err)
	}
	// A waiter goes through once enough is released.
	got := make(chan error, 1)
	go func() {
		h, err := b.acquire(context.Background(), 50)
		h.release()
		got <- err
	}()
	second.release()
	first.release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if held, waiting := b.usage(); held != 0 || waiting != 0 {
		t.Fatalf("after every release: held %d, waiting %d", held, waiting)
	}
}

func TestBudgetKeepShrinksAndReleaseIsIdempotent(t *testing.T) {
	b := newHostBudget(100, 40)
	h, _ := b.acquire(cancelled(), 50)
	if !h.keep(20, false) {
		t.Fatal("keeping 20 of 50 refused")
	}
	if held, _ := b.usage(); held != 20 {
		t.Fatalf("held %d after keeping 20", held)
	}
	h.keep(500, false) // never more than was acquired
	if held, _ := b.usage(); held != 20 {
		t.Fatalf("held %d after asking to keep more than acquired", held)
	}
	h.release()
	h.release()
	if held, _ := b.usage(); held != 0 {
		t.Fatalf("held %d after a double release", held)
	}
	var none *hold // no budget: every method is a no-op
	if !none.keep(10, true) {
		t.Fatal("a nil hold refused")
	}
	none.release()
}

// The waiting share is the budget less one largest frame: holds that wait on
// a process are refused past it, so a largest frame can always be read (a
// kill, a cancel) however many of them there are.
func TestBudgetWaitingShareLeavesRoomForALargestFrame(t *testing.T) {
	const limit, frame = 100, 40
	b := newHostBudget(limit, frame)
	var waiting []*hold
	for range 3 {
		h, err := b.acquire(cancelled(), 20)
		if err != nil || !h.keep(20, true) {
			t.Fatalf("20 waiting bytes refused with %d waiting", 20*len(waiting))
		}
		waiting = append(waiting, h)
	}
	h, err := b.acquire(cancelled(), 20)
	if err != nil {
		t.Fatal(err)
	}
	if h.keep(20, true) {
		t.Fatal("waiting bytes kept past the waiting share")
	}
	if held, w := b.usage(); held != 60 || w != 60 {
		t.Fatalf("a refused keep must release all it held: held %d, waiting %d", held, w)
	}
	frameHold, err := b.acquire(cancelled(), frame)
	if err != nil {
		t.Fatalf("a largest frame could not be read with the waiting share full: %v", err)
	}
	frameHold.release()
	for _, h := range waiting {
		h.release()
	}
	if held, w := b.usage(); held != 0 || w != 0 {
		t.Fatalf("after every release: held %d, waiting %d", held, w)
	}
}

// The release paths over the protocol: stdin for a process that does not
// read waits in the waiting share; an exec or stdin past it is refused
// (quota), and that exec then refuses all later stdin (conflict, so its
// process never reads a stream with a gap); a kill still gets through and
// frees everything, which the second round proves by filling the share
// again.
func TestStdinPastTheWaitingShareIsRefusedAndAKillGetsThrough(t *testing.T) {
	h := startHost(t, newFake(), func(o *Options) {
		o.Limits = DefaultLimits()
		o.Limits.MaxFrameBytes = 64 << 10
		o.Limits.MaxHeldRequestBytes = 256 << 10 // a waiting share of 192 KiB
	})
	if got := h.initialize(nil).Limits.MaxHeldRequestBytes; got != 256<<10 {
		t.Fatalf("initialize announces max_held_request_bytes %d", got)
	}
	box := newBox(t, h)
	chunk := make([]byte, 40<<10)
	for round := range 2 {
		id := fmt.Sprintf("deaf-%d", round)
		p := execParams(box, id, "sleep")
		p["stdin"] = true
		exec := h.send(protocol.MethodSandboxExec, p)
		var parked []string
		for range 4 { // 160 KiB waits for a process that never reads
			parked = append(parked, h.send(protocol.MethodExecStdin, map[string]any{"exec_id": id, "data": chunk}))
		}
		msg := h.callErr(protocol.MethodSandboxExec, execParams(box, "big-argv", "echo", strings.Repeat("a", 40<<10)), protocol.KindQuota)
		if !strings.Contains(msg, "retry when an exec ends") {
			t.Fatalf("exec past the waiting share: %q", msg)
		}
		h.callErr(protocol.MethodExecStdin, map[string]any{"exec_id": id, "data": chunk}, protocol.KindQuota)
		h.callErr(protocol.MethodExecStdin, map[string]any{"exec_id": id, "data": []byte("x")}, protocol.KindConflict)
		h.call(protocol.MethodExecKill, map[string]any{"exec_id": id}, nil)
		if m := h.await(exec); m.Error != nil || !strings.Contains(string(m.Result), `"killed":true`) {
			t.Fatalf("killed exec: %+v %s", m.Error, m.Result)
		}
		for _, req := range parked {
			if m := h.await(req); m.Error == nil || m.Error.Data.Kind != protocol.KindConflict {
				t.Fatalf("stdin for a killed exec: %+v %s", m.Error, m.Result)
			}
		}
	}
}

// Every request in flight costs at least requestOverhead, so a stream of
// tiny requests queued behind a process that never reads is bounded too:
// they run out of waiting share and are refused, however small they are.
func TestTinyRequestsQueuedBehindABlockedExecAreBounded(t *testing.T) {
	h := startHost(t, newFake(), func(o *Options) {
		o.Limits = DefaultLimits()
		o.Limits.MaxFrameBytes = 64 << 10
		o.Limits.MaxHeldRequestBytes = 256 << 10 // 48 requests' worth of waiting share
	})
	h.initialize(nil)
	box := newBox(t, h)
	p := execParams(box, "deaf", "sleep")
	p["stdin"] = true
	exec := h.send(protocol.MethodSandboxExec, p)
	blocked := h.send(protocol.MethodExecStdin, map[string]any{"exec_id": "deaf", "data": []byte("never read")})
	var queued []string
	for range 100 {
		queued = append(queued, h.send(protocol.MethodExecStdin, map[string]any{"exec_id": "deaf"}))
	}
	h.call(protocol.MethodExecKill, map[string]any{"exec_id": "deaf"}, nil)
	h.await(exec)
	h.await(blocked)
	// The first one past the share is refused with quota, and the ones
	// after it by the exec's refused stdin.
	refused := 0
	for _, id := range queued {
		if m := h.await(id); m.Error != nil && strings.Contains(m.Error.Message, "refused") {
			refused++
		}
	}
	if refused < 100-48 {
		t.Fatalf("%d of 100 empty exec/stdin queued behind a blocked one were refused: requests in flight cost nothing", refused)
	}
}

func TestBudgetSettleKeepsTheOverheadOutsideTheWaitingShare(t *testing.T) {
	b := newHostBudget(1<<20, 256<<10)
	h, _ := b.acquire(cancelled(), 100<<10)
	if !h.keep(50<<10, true) {
		t.Fatal("keep refused")
	}
	h.settle()
	if held, waiting := b.usage(); held != requestOverhead || waiting != 0 {
		t.Fatalf("settled: held %d, waiting %d; want %d, 0", held, waiting, requestOverhead)
	}
	h.release()
	if held, waiting := b.usage(); held != 0 || waiting != 0 {
		t.Fatalf("released: held %d, waiting %d", held, waiting)
	}
}
