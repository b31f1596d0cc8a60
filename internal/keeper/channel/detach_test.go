package channel

import (
	"bufio"
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
	if err != nil || info.Offset != 1 || !info.Running || info.Dropped != 0 {
		t.Fatalf("attach: %+v %v", info, err)
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
	if err != nil || info.Offset != 4000 || info.Dropped != 4000 || info.Buffer != 1000 || info.End != 5000 {
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
