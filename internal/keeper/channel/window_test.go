package channel

import (
	"io"
	"sync"
	"testing"
)

// windowOf is a stream's output window now.
func windowOf(e *Exec) int {
	e.st.mu.Lock()
	defer e.st.mu.Unlock()
	return e.st.win
}

// readFast reads an exec's stdout to EOF with reads larger than any window,
// so every read takes all that arrived (the reader keeps up), calling
// seen after each read; it returns the bytes read.
func readFast(t *testing.T, e *Exec, seen func()) int {
	t.Helper()
	buf := make([]byte, 2*DefaultMaxWindow)
	total := 0
	for {
		n, err := e.Stdout().Read(buf)
		total += n
		if n > 0 {
			seen()
		}
		if err == io.EOF {
			return total
		}
		if err != nil {
			t.Fatalf("stdout: %v", err)
		}
	}
}

func startHead(t *testing.T, c *Conn, n string) *Exec {
	t.Helper()
	e, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"head", "-c", n, "/dev/zero"}, Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func openWith(t *testing.T, o Options) *Conn {
	t.Helper()
	k := startStdio(t)
	c, err := Open(ctx(t), pipeRW{Reader: k.out, WriteCloser: k.stdin, rc: k.out}, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A stream whose reader keeps up grows its window to MaxWindow, every
// byte still arrives, and the growth goes back to the Conn's budget when
// the exec ends.
func TestWindowGrowsForAReaderThatKeepsUp(t *testing.T) {
	c := openWith(t, Options{})
	e := startHead(t, c, "16777216")
	largest := 0
	if n := readFast(t, e, func() { largest = max(largest, windowOf(e)) }); n != 16<<20 {
		t.Fatalf("read %d bytes", n)
	}
	if _, err := e.Wait(); err != nil {
		t.Fatal(err)
	}
	if largest != DefaultMaxWindow {
		t.Errorf("the window grew to %d; want %d", largest, DefaultMaxWindow)
	}
	if extra := c.extra.Load(); extra != 0 {
		t.Errorf("%d bytes of window still held after the exec ended", extra)
	}
}

// The streams of one Conn never hold more window above Window than its
// GrowBudget together; the one that grows first takes it.
func TestWindowGrowthIsBoundedPerConn(t *testing.T) {
	const budget = DefaultWindow // room for one stream to double once
	c := openWith(t, Options{GrowBudget: budget})
	var mu sync.Mutex
	largest, over := 0, int64(0)
	seen := func(e *Exec) func() {
		return func() {
			w, extra := windowOf(e), c.extra.Load()
			mu.Lock()
			largest, over = max(largest, w), max(over, extra)
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	for range 3 {
		e := startHead(t, c, "4194304")
		wg.Go(func() {
			if n := readFast(t, e, seen(e)); n != 4<<20 {
				t.Errorf("read %d bytes", n)
			}
			if _, err := e.Wait(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if over > budget {
		t.Errorf("the streams held %d bytes above their windows; the budget is %d", over, budget)
	}
	if largest != 2*DefaultWindow {
		t.Errorf("the largest window was %d; want one doubling, %d", largest, 2*DefaultWindow)
	}
	if extra := c.extra.Load(); extra != 0 {
		t.Errorf("%d bytes of window still held after the execs ended", extra)
	}
}

// A MaxWindow at Window keeps the window fixed.
func TestWindowFixedWhenMaxIsWindow(t *testing.T) {
	c := openWith(t, Options{MaxWindow: DefaultWindow})
	e := startHead(t, c, "4194304")
	largest := 0
	readFast(t, e, func() { largest = max(largest, windowOf(e)) })
	if _, err := e.Wait(); err != nil {
		t.Fatal(err)
	}
	if largest != DefaultWindow {
		t.Errorf("the window grew to %d with MaxWindow = Window", largest)
	}
}

// A window smaller than two frames is raised to two: the keeper's quiet
// stderr pump may hold a frame of the shared credit, and stdout still
// gets the rest (at 32 KiB, stdout waited for good).
func TestWindowBelowTwoFramesStillFlows(t *testing.T) {
	c := openWith(t, Options{Window: 16 << 10, MaxWindow: -1})
	if c.window != minWindow {
		t.Fatalf("window %d; want it raised to %d", c.window, minWindow)
	}
	r := run(t, c, ExecSpec{Argv: []string{"head", "-c", "4194304", "/dev/zero"}})
	if len(r.stdout) != 4<<20 {
		t.Fatalf("read %d bytes", len(r.stdout))
	}
}
