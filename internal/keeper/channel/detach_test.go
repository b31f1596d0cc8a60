package channel

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// A detached exec outlives its holder: a later holder (a new generation)
// lists it, attaches from an offset, gets the replay, then live output,
// writes its stdin, and gets the exit, which stays kept afterwards.
func TestDetachedExecOutlivesItsHolder(t *testing.T) {
	k := startSocket(t)
	first := k.open(t)
	e, err := first.Exec(ctx(t), ExecSpec{Argv: []string{"sh", "-c", "echo one; read x; echo two $x >&2; exit 4"}, Env: testEnv, Stdin: true, Detach: true})
	if err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(e.Stdout()).ReadString('\n'); line != "one\n" {
		t.Fatalf("first line %q", line)
	}
	first.Close()

	second := k.open(t)
	if second.Generation() <= first.Generation() {
		t.Fatalf("generation %d after %d", second.Generation(), first.Generation())
	}
	list, err := second.ListExecs(ctx(t))
	if err != nil || len(list) != 1 || list[0].ID != e.ID() || !list[0].Running || list[0].End != 4 || list[0].Buffer != 1<<20 {
		t.Fatalf("list: %+v %v", list, err)
	}
	a, info, err := second.Attach(ctx(t), e.ID(), 1)
	if err != nil || info.Offset != 1 || !info.Running || info.Dropped != 0 || !info.Stdin {
		t.Fatalf("attach: %+v %v (want running, with stdin)", info, err)
	}
	if _, err := io.WriteString(a.Stdin(), "hi\n"); err != nil {
		t.Fatal(err)
	}
	r := collect(t, a)
	if r.stdout != "ne\n" || r.stderr != "two hi\n" || r.status.Code != 4 {
		t.Fatalf("attached: %+v", r)
	}
	list, err = second.ListExecs(ctx(t))
	if err != nil || len(list) != 1 || list[0].Running || list[0].Exit == nil || list[0].Exit.Code != 4 {
		t.Fatalf("list after the end: %+v %v", list, err)
	}
	// Attached after its end: the replay from the offset, then the exit.
	a, info, err = second.Attach(ctx(t), e.ID(), 4)
	if err != nil || info.Running || info.Exit == nil || info.Exit.Code != 4 || info.End != 11 {
		t.Fatalf("attach after the end: %+v %v", info, err)
	}
	if r := collect(t, a); r.stdout != "" || r.stderr != "two hi\n" || r.status.Code != 4 {
		t.Fatalf("replay after the end: %+v", r)
	}
	if _, _, err := second.Attach(ctx(t), "no-such-exec", 0); !errors.Is(err, ErrUnknownExec) {
		t.Fatalf("unknown exec: %v", err)
	}
}

// The ring keeps the last Buffer bytes and counts what it let go.
func TestDetachedRingCountsWhatItDrops(t *testing.T) {
	k := startSocket(t)
	c := k.open(t)
	e, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"sh", "-c", "head -c 5000 /dev/zero | tr '\\0' x"}, Env: testEnv, Detach: true, Buffer: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Release(); err != nil {
		t.Fatal(err)
	}
	// Wait for its end through the list, then replay.
	waitFor(t, func() bool {
		list, err := c.ListExecs(ctx(t))
		return err == nil && len(list) == 1 && !list[0].Running
	})
	a, info, err := c.Attach(ctx(t), e.ID(), 0)
	if err != nil || info.Offset != 4000 || info.Dropped != 4000 || info.Buffer != 1000 || info.End != 5000 || info.Stdin {
		t.Fatalf("attach: %+v %v", info, err)
	}
	if r := collect(t, a); r.stdout != strings.Repeat("x", 1000) || r.status.Code != 0 {
		t.Fatalf("replay: %d bytes, %+v", len(r.stdout), r.status)
	}
}

// On a socket keeper a second holder takes over: the first is told it
// was fenced and its non-detached execs die; the second works.
func TestTakeoverOverTheSocket(t *testing.T) {
	k := startSocket(t)
	first := k.open(t)
	e, err := first.Exec(ctx(t), ExecSpec{Argv: []string{"sh", "-c", "sleep 1000 & echo $!; echo $$; wait"}, Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	pids := readPIDs(t, bufio.NewReader(e.Stdout()), 2)
	second := k.open(t)
	<-first.Done()
	if !errors.Is(first.Err(), ErrFenced) || !errors.Is(first.Err(), ErrBroken) {
		t.Fatalf("first holder: %v", first.Err())
	}
	if _, err := e.Wait(); !errors.Is(err, ErrBroken) {
		t.Fatalf("first holder's exec: %v", err)
	}
	for _, pid := range pids {
		gone(t, pid)
	}
	if r := run(t, second, ExecSpec{Argv: []string{"echo", "mine"}}); r.stdout != "mine\n" {
		t.Fatalf("second holder: %+v", r)
	}
}

// Next gives a detached exec's output in order with true offsets, across
// both streams and across a gap the ring dropped while nobody read.
func TestDetachedChunksCarryOffsets(t *testing.T) {
	k := startSocket(t)
	c := k.open(t)
	e, err := c.Exec(ctx(t), ExecSpec{ID: "build-1", Argv: []string{"sh", "-c", "echo out; echo err >&2; read x; head -c 1048576 /dev/zero; echo tail"}, Env: testEnv, Stdin: true, Detach: true, Buffer: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if e.ID() != "build-1" {
		t.Fatalf("id %q", e.ID())
	}
	var got []Chunk
	for len(got) < 2 {
		ch, err := e.Next()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ch)
	}
	// Two pipes, two readers in the keeper: which came first is the
	// keeper's order, and the offsets follow it.
	if got[0].Stream == got[1].Stream || got[0].Offset != 0 || got[1].Offset != int64(len(got[0].Data)) {
		t.Fatalf("chunks %+v", got)
	}
	for _, ch := range got {
		if want := map[string]string{"stdout": "out\n", "stderr": "err\n"}[ch.Stream]; string(ch.Data) != want {
			t.Fatalf("chunk %+v", ch)
		}
	}
	// A second start with the same id is refused.
	_, err = c.Exec(ctx(t), ExecSpec{ID: "build-1", Argv: []string{"true"}, Env: testEnv, Detach: true})
	var se *StartError
	if !errors.As(err, &se) || se.Kind != "conflict" || se.Field != "id" {
		t.Fatalf("id in use: %v", err)
	}
	// Nobody reads while a MiB passes a ring of 1000 bytes: once the
	// window is spent the keeper's follower waits, the ring goes on, and
	// the next chunk this reader gets says where the output resumed.
	if err := e.Release(); err != nil {
		t.Fatal(err)
	}
	a, _, err := c.Attach(ctx(t), "build-1", 8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(a.Stdin(), "go\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		list, err := c.ListExecs(ctx(t))
		return err == nil && len(list) == 1 && !list[0].Running
	})
	var end int64
	gaps := 0
	var tail []byte
	for {
		ch, err := a.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ch.Offset < end {
			t.Fatalf("chunk at %d after %d", ch.Offset, end)
		}
		if ch.Offset > end {
			gaps++
		}
		end = ch.Offset + int64(len(ch.Data))
		tail = append(tail, ch.Data...)
	}
	if end != 8+1<<20+5 || !strings.HasSuffix(string(tail), "tail\n") || gaps == 0 {
		t.Fatalf("ended at %d after %d gaps with %q", end, gaps, tail[max(0, len(tail)-10):])
	}
	if st, err := a.Wait(); err != nil || st.Code != 0 {
		t.Fatalf("%+v %v", st, err)
	}
}

// KillExec kills a detached exec nobody follows; an attach then ends
// with Killed.
func TestKillExecByID(t *testing.T) {
	k := startSocket(t)
	c := k.open(t)
	e, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"sleep", "1000"}, Env: testEnv, Detach: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Release(); err != nil {
		t.Fatal(err)
	}
	if err := c.KillExec(ctx(t), e.ID()); err != nil {
		t.Fatal(err)
	}
	a, _, err := c.Attach(ctx(t), e.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if r := collect(t, a); !r.status.Killed || r.status.Code != 137 || r.status.Signal != "SIGKILL" {
		t.Fatalf("after KillExec: %+v", r.status)
	}
	if err := c.KillExec(ctx(t), "nope"); !errors.Is(err, ErrUnknownExec) {
		t.Fatalf("unknown exec: %v", err)
	}
}

// An exec whose caller gave up before it started is killed, detached or
// not: nothing runs that its caller does not know of.
func TestCancelledStartLeavesNothingRunning(t *testing.T) {
	k := startSocket(t)
	c := k.open(t)
	cctx, cancel := context.WithCancel(ctx(t))
	cancel()
	if _, err := c.Exec(cctx, ExecSpec{Argv: []string{"sleep", "1000"}, Env: testEnv, Detach: true}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled start: %v", err)
	}
	waitFor(t, func() bool {
		list, err := c.ListExecs(ctx(t))
		return err == nil && len(list) == 1 && !list[0].Running && list[0].Exit.Killed
	})
}

// The keeper keeps the last 64 ended detached execs, not every one ever.
func TestEndedDetachedExecsAreBounded(t *testing.T) {
	k := startSocket(t)
	c := k.open(t)
	var ids []string
	for range 66 {
		e, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"true"}, Env: testEnv, Detach: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Wait(); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID())
	}
	list, err := c.ListExecs(ctx(t))
	if err != nil || len(list) != 64 {
		t.Fatalf("%d kept, %v", len(list), err)
	}
	if list[0].ID != ids[2] || list[63].ID != ids[65] {
		t.Fatalf("kept %s..%s, want %s..%s", list[0].ID, list[63].ID, ids[2], ids[65])
	}
}

// An attach at an offset inside the ring's first chunk replays from that
// offset: the first chunk says so and the next follow it, however fast the
// keeper's frames arrive after its answer. Its Stdin is there when the
// exec has a stdin and nil when it has none, as for Exec.
func TestAttachInsideTheFirstChunk(t *testing.T) {
	k := startSocket(t)
	c := k.open(t)
	with, err := c.Exec(ctx(t), ExecSpec{ID: "with-stdin", Argv: []string{"sh", "-c", "printf 0123456789; cat"}, Env: testEnv, Stdin: true, Detach: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := with.Release(); err != nil {
		t.Fatal(err)
	}
	without, err := c.Exec(ctx(t), ExecSpec{ID: "without-stdin", Argv: []string{"sh", "-c", "printf 0123456789; printf abcdef"}, Env: testEnv, Detach: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := without.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := without.Release(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		list, err := c.ListExecs(ctx(t))
		if err != nil || len(list) != 2 {
			return false
		}
		for _, x := range list {
			if x.End < 10 {
				return false
			}
		}
		return true
	})
	for round := range 20 {
		a, info, err := c.Attach(ctx(t), "without-stdin", 4)
		if err != nil {
			t.Fatal(err)
		}
		if a.Stdin() != nil || info.Stdin {
			t.Fatalf("an exec without stdin attached with one (%+v)", info)
		}
		next := int64(4)
		var data []byte
		for {
			ch, err := a.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if ch.Offset != next {
				t.Fatalf("round %d: chunk %+v at %d, want %d", round, ch, ch.Offset, next)
			}
			next += int64(len(ch.Data))
			data = append(data, ch.Data...)
		}
		if string(data) != "456789abcdef" {
			t.Fatalf("round %d: replayed %q", round, data)
		}
	}
	a, info, err := c.Attach(ctx(t), "with-stdin", 3)
	if err != nil {
		t.Fatal(err)
	}
	if a.Stdin() == nil || !info.Stdin {
		t.Fatalf("an exec with stdin attached without one (%+v)", info)
	}
	if _, err := io.WriteString(a.Stdin(), "more"); err != nil {
		t.Fatal(err)
	}
	if err := a.Stdin().Close(); err != nil {
		t.Fatal(err)
	}
	r := collect(t, a)
	if r.stdout != "3456789more" || r.status.Code != 0 {
		t.Fatalf("%+v", r)
	}
}
