package channel

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// mergedStream is what Docker's attach makes of one container's stdio with
// several attachers: every attacher's writes go into the one stdin, and
// every attacher sees all of stdout.
type mergedStream struct {
	k    *stdioKeeper
	mu   sync.Mutex
	taps []*io.PipeWriter
}

func newMergedStream(t *testing.T) *mergedStream {
	m := &mergedStream{k: startStdio(t)}
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := m.k.out.Read(buf)
			m.mu.Lock()
			taps := append([]*io.PipeWriter(nil), m.taps...)
			m.mu.Unlock()
			for _, tap := range taps {
				if n > 0 {
					_, _ = tap.Write(buf[:n]) // a closed attacher's write fails: it is gone
				}
				if err != nil {
					tap.CloseWithError(err)
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return m
}

// attach is one more attacher.
func (m *mergedStream) attach() *attacher {
	pr, pw := io.Pipe()
	m.mu.Lock()
	m.taps = append(m.taps, pw)
	m.mu.Unlock()
	return &attacher{m: m, r: pr}
}

// writeRaw writes bytes into the merged stdin as one write.
func (m *mergedStream) writeRaw(p []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, err := m.k.stdin.Write(p)
	return err
}

type attacher struct {
	m *mergedStream
	r *io.PipeReader
}

func (a *attacher) Read(p []byte) (int, error)  { return a.r.Read(p) }
func (a *attacher) Write(p []byte) (int, error) { return len(p), a.m.writeRaw(p) }
func (a *attacher) Close() error                { return a.r.Close() }

// Two holders on one merged stream: the newer takes over, the older is
// told (its Conn fails with ErrFenced), the keeper refuses every frame of
// the older generation, even one that lands in the middle of one of the
// newer holder's frames, and the newer holder keeps working.
func TestFencingOnAMergedStream(t *testing.T) {
	m := newMergedStream(t)
	older, err := Open(ctx(t), m.attach(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer older.Close()
	// An observer sees every frame, as any attacher does.
	frames := make(chan keeperproto.Frame, 64)
	observer := m.attach()
	defer observer.Close()
	go func() {
		fr := keeperproto.NewFrameReader(observer)
		for {
			f, err := fr.Next()
			if err != nil {
				close(frames)
				return
			}
			if f.Type == keeperproto.ChanFenced {
				frames <- f
			}
		}
	}()
	newer, err := Open(ctx(t), m.attach(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer newer.Close()
	<-older.Done()
	if !errors.Is(older.Err(), ErrFenced) {
		t.Fatalf("older holder: %v", older.Err())
	}
	if f := <-frames; f.Gen != older.Generation() {
		t.Fatalf("the takeover's fence went to generation %d, not the older holder's %d", f.Gen, older.Generation())
	}

	dir := t.TempDir()
	forged := func(gen uint64, stream uint32, marker string) []byte {
		payload, _ := json.Marshal(keeperproto.Exec{Argv: []string{"touch", filepath.Join(dir, marker)}, Env: testEnv, Window: 1 << 16})
		b, err := keeperproto.AppendFrame(nil, keeperproto.Frame{Type: keeperproto.ChanExec, Stream: stream, Gen: gen, Payload: payload})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// A whole frame of the older generation.
	if err := m.writeRaw(forged(older.Generation(), 1000, "whole")); err != nil {
		t.Fatal(err)
	}
	// One that lands in the middle of a frame of the newer generation: the
	// newer frame fails its CRC, the keeper resyncs and refuses the older one.
	mine := forged(newer.Generation(), 1001, "cut")
	theirs := forged(older.Generation(), 1002, "inside")
	if err := m.writeRaw(append(append(append([]byte(nil), mine[:40]...), theirs...), mine[40:]...)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		f, ok := <-frames
		if !ok || f.Gen != older.Generation() {
			t.Fatalf("refusal: %+v %v", f, ok)
		}
		var fenced keeperproto.Fenced
		if err := json.Unmarshal(f.Payload, &fenced); err != nil || fenced.Generation != newer.Generation() {
			t.Fatalf("fence payload %s", f.Payload)
		}
	}
	// The newer holder works, and nothing the older one sent ran: each
	// frame is handled in order, so its refusals came before this exec.
	if r := run(t, newer, ExecSpec{Argv: []string{"echo", "still mine"}}); r.stdout != "still mine\n" {
		t.Fatalf("newer holder: %+v", r)
	}
	for _, marker := range []string{"whole", "inside", "cut"} {
		if _, err := os.Stat(filepath.Join(dir, marker)); err == nil {
			t.Errorf("the frame that makes %q ran", marker)
		}
	}
}

// A holder that dies without its transport ending (an attach stream stays
// open for the keeper when the resident is SIGKILLed) loses its lease: the
// keeper kills its non-detached execs, and a new holder takes over.
func TestSilentHolderLosesItsLease(t *testing.T) {
	m := newMergedStream(t)
	dead, err := Open(ctx(t), m.attach(), Options{Lease: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e, err := dead.Exec(ctx(t), ExecSpec{Argv: []string{"sh", "-c", "sleep 1000 & echo $!; echo $$; wait"}, Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	pids := readPIDs(t, bufio.NewReader(e.Stdout()), 2)
	dead.Close() // its attacher goes; the keeper's stdin stays open
	for _, pid := range pids {
		gone(t, pid)
	}
	next, err := Open(ctx(t), m.attach(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if r := run(t, next, ExecSpec{Argv: []string{"echo", "next"}}); r.stdout != "next\n" {
		t.Fatalf("next holder: %+v", r)
	}
}
