package providertest

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// runDetach: a detached exec outlives the provider instance that started
// it, keeps its output in the announced ring, and a new instance (a new
// resident) attaches from an offset, feeds its stdin, lists, kills it.
func runDetach(t *testing.T, h Harness) {
	p := h.New(t)
	if _, ok := p.(provider.Detacher); !ok || !p.Info().Capabilities.Detach {
		t.Skipf("provider %s has no detach capability", p.Info().Name)
	}
	if p.Info().DetachedBufferBytes <= 0 {
		t.Fatalf("detach is announced with DetachedBufferBytes %d", p.Info().DetachedBufferBytes)
	}
	t.Run("outlives_its_resident_and_resumes", func(t *testing.T) { testDetachResume(t, h) })
	t.Run("ring_counts_what_it_dropped", func(t *testing.T) { testDetachRing(t, h) })
	t.Run("kill_list_and_errors", func(t *testing.T) { testDetachKill(t, h) })
	t.Run("deadline_held_inside", func(t *testing.T) { testDetachDeadline(t, h) })
}

// chunks reads an attachment until want bytes of output have come or it
// ends, and returns them with the offset after the last one.
func readChunks(t *testing.T, a provider.Attachment, want int) (string, int64, error) {
	t.Helper()
	var out strings.Builder
	var next int64 = -1
	for out.Len() < want {
		c, err := a.Next()
		if err != nil {
			return out.String(), next, err
		}
		if next >= 0 && c.Offset != next {
			t.Fatalf("chunk at offset %d follows one ending at %d", c.Offset, next)
		}
		out.Write(c.Data)
		next = c.Offset + int64(len(c.Data))
	}
	return out.String(), next, nil
}

// startedBy is a provider instance that only starts detached execs and is
// then closed, as a resident that exits: the sandbox is made and removed by
// the env's own instance.
func (e *env) startedBy() provider.Provider {
	return e.h.New(e.t)
}

func testDetachResume(t *testing.T, h Harness) {
	e := newEnv(t, h)
	id := e.create(protocol.Spec{}, nil)
	first := e.startedBy()
	d := first.(provider.Detacher)
	script := `read a; echo "got-$a"; read b; echo "then-$b" >&2; exit 7`
	if err := d.StartDetached(ctx(t), id, provider.ExecRequest{Argv: []string{"sh", "-c", script}, Stdin: true, Detach: true, ID: "resume-1"}); err != nil {
		t.Fatalf("StartDetached: %v", err)
	}
	err := d.StartDetached(ctx(t), id, provider.ExecRequest{Argv: []string{"true"}, Detach: true, ID: "resume-1"})
	wantKind(t, "a second detached exec with the same id", err, protocol.KindConflict)

	a, err := d.Attach(ctx(t), id, "resume-1", 0)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	if a.Stdin() == nil {
		t.Fatal("an exec started with stdin attached without one")
	}
	if _, err := a.Stdin().Write([]byte("one\n")); err != nil {
		t.Fatalf("stdin: %v", err)
	}
	got, next, err := readChunks(t, a, len("got-one\n"))
	if err != nil || got != "got-one\n" || next != int64(len(got)) {
		t.Fatalf("first output %q up to %d, %v", got, next, err)
	}
	_ = a.Close()
	// The resident goes: its provider instance closes. The exec does not.
	_ = first.Close()
	d = h.New(t).(provider.Detacher)
	execs, err := d.ListExecs(ctx(t), id)
	if err != nil || len(execs) != 1 || execs[0].ExecID != "resume-1" || !execs[0].Running || execs[0].NextOffset != next {
		t.Fatalf("ListExecs after restart = %+v, %v; want resume-1 running at %d", execs, err, next)
	}
	a, err = d.Attach(ctx(t), id, "resume-1", next)
	if err != nil {
		t.Fatalf("Attach after restart: %v", err)
	}
	defer a.Close()
	if info := a.Info(); info.Offset != next || info.Lost != 0 {
		t.Fatalf("attach info %+v; want offset %d, nothing lost", info, next)
	}
	if _, err := a.Stdin().Write([]byte("two\n")); err != nil {
		t.Fatalf("stdin after restart: %v", err)
	}
	c, err := a.Next()
	if err != nil || c.Stream != protocol.StreamStderr || string(c.Data) != "then-two\n" || c.Offset != next {
		t.Fatalf("chunk after restart = %+v, %v; want stderr then-two at %d", c, err, next)
	}
	if _, err := a.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last chunk: %v; want io.EOF", err)
	}
	if st, ok := a.Exit(); !ok || st.Code != 7 {
		t.Fatalf("Exit = %+v, %v; want 7", st, ok)
	}
	execs, _ = d.ListExecs(ctx(t), id)
	if len(execs) != 1 || execs[0].Running || execs[0].ExitCode == nil || *execs[0].ExitCode != 7 {
		t.Fatalf("ListExecs after the end = %+v", execs)
	}
}

func testDetachRing(t *testing.T, h Harness) {
	e := newEnv(t, h)
	id := e.create(protocol.Spec{}, nil)
	d := e.p.(provider.Detacher)
	ring := e.p.Info().DetachedBufferBytes
	extra := int64(4096)
	if err := d.StartDetached(ctx(t), id, provider.ExecRequest{Argv: []string{"head", "-c", strconv.FormatInt(ring+extra, 10), "/dev/zero"}, Detach: true, ID: "ring-1"}); err != nil {
		t.Fatalf("StartDetached: %v", err)
	}
	await(t, "the noisy exec to end", func() bool {
		execs, err := d.ListExecs(ctx(t), id)
		return err == nil && len(execs) == 1 && !execs[0].Running
	})
	a, err := d.Attach(ctx(t), id, "ring-1", 0)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	defer a.Close()
	info := a.Info()
	if info.Lost < extra || info.Offset != info.Lost {
		t.Fatalf("attach from 0 after %d bytes into a %d-byte ring: %+v; want at least %d lost", ring+extra, ring, info, extra)
	}
	got, next, err := readChunks(t, a, int(ring+extra))
	if !errors.Is(err, io.EOF) || next != ring+extra || int64(len(got)) != ring+extra-info.Lost {
		t.Fatalf("replay: %d bytes up to %d, %v; want the kept %d up to %d", len(got), next, err, ring+extra-info.Lost, ring+extra)
	}
}

func testDetachKill(t *testing.T, h Harness) {
	e := newEnv(t, h)
	id := e.create(protocol.Spec{}, nil)
	d := e.p.(provider.Detacher)
	if err := d.StartDetached(ctx(t), id, provider.ExecRequest{Argv: []string{"sh", "-c", "sleep 300 & sleep 300"}, Detach: true, ID: "kill-1"}); err != nil {
		t.Fatalf("StartDetached: %v", err)
	}
	a, err := d.Attach(ctx(t), id, "kill-1", 0)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	defer a.Close()
	if a.Stdin() != nil {
		t.Error("an exec started without stdin attached with one")
	}
	if err := d.KillExec(ctx(t), id, "kill-1"); err != nil {
		t.Fatalf("KillExec: %v", err)
	}
	if _, err := a.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the kill: %v; want io.EOF", err)
	}
	if st, ok := a.Exit(); !ok || !st.Killed {
		t.Fatalf("Exit after KillExec = %+v, %v; want killed", st, ok)
	}
	if err := d.KillExec(ctx(t), id, "kill-1"); err != nil {
		t.Errorf("killing an ended detached exec: %v; want a no-op", err)
	}
	if out := e.sh(id, "", "ps -o args 2>/dev/null | grep -c '^sleep 300' || true"); strings.TrimSpace(out) != "0" {
		t.Errorf("after KillExec %s processes of its tree still run", strings.TrimSpace(out))
	}
	_, err = d.Attach(ctx(t), id, "no-such-exec", 0)
	wantKind(t, "Attach of a missing exec", err, protocol.KindNotFound)
	wantKind(t, "KillExec of a missing exec", d.KillExec(ctx(t), id, "no-such-exec"), protocol.KindNotFound)
	_, err = d.ListExecs(ctx(t), "no-such-sandbox")
	wantKind(t, "ListExecs of a missing sandbox", err, protocol.KindNotFound)
}

func testDetachDeadline(t *testing.T, h Harness) {
	e := newEnv(t, h)
	id := e.create(protocol.Spec{}, nil)
	starter := e.startedBy()
	req := provider.ExecRequest{Argv: []string{"sleep", "300"}, Detach: true, ID: "deadline-1", Deadline: time.Now().Add(2 * time.Second)}
	if err := starter.(provider.Detacher).StartDetached(ctx(t), id, req); err != nil {
		t.Fatalf("StartDetached: %v", err)
	}
	_ = starter.Close() // nobody outside is left to enforce it
	d := h.New(t).(provider.Detacher)
	a, err := d.Attach(context.Background(), id, "deadline-1", 0)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	defer a.Close()
	if _, err := a.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("waiting for the deadline: %v; want io.EOF", err)
	}
	if st, ok := a.Exit(); !ok || !st.TimedOut {
		t.Fatalf("Exit past the deadline = %+v, %v; want timed out", st, ok)
	}
}
