package channel

import (
	"io"
	"testing"
)

func outstandingOf(e *Exec) int {
	e.st.mu.Lock()
	defer e.st.mu.Unlock()
	return e.st.outstanding
}

// readSlow reads an exec's stdout to EOF in small reads, calling seen
// after each; it returns the bytes read.
func readSlow(t *testing.T, e *Exec, seen func()) int {
	t.Helper()
	buf := make([]byte, 4<<10)
	total := 0
	for {
		n, err := e.Stdout().Read(buf)
		total += n
		seen()
		if err == io.EOF {
			return total
		}
		if err != nil {
			t.Fatalf("stdout: %v", err)
		}
	}
}

// With many streams open, each is granted at most its share of the
// Conn's output budget (never below two frames): a stream opened among
// many starts at its share, one opened first is topped up only to it, and
// every byte still arrives. Once the others end, a new stream has the
// whole window again.
func TestManyStreamsShareTheOutputBudget(t *testing.T) {
	c := openWith(t, Options{OutputBudget: 4 * minWindow, MaxWindow: DefaultWindow})
	var execs []*Exec
	for range 8 {
		execs = append(execs, startHead(t, c, "1048576"))
	}
	if got := windowOf(execs[0]); got != DefaultWindow {
		t.Errorf("the first stream's window is %d; want %d", got, DefaultWindow)
	}
	if got := windowOf(execs[7]); got != minWindow {
		t.Errorf("the eighth stream's window is %d; want its share, %d", got, minWindow)
	}
	for i, e := range execs {
		topped, most := false, 0
		n := readSlow(t, e, func() {
			// Once a grant has topped it up, a stream never has more
			// than its share outstanding (the open streams only fall).
			o := outstandingOf(e)
			if o <= minWindow/2 {
				topped = true
			}
			if topped {
				most = max(most, o)
			}
		})
		if n != 1<<20 {
			t.Fatalf("exec %d: read %d bytes", i, n)
		}
		if _, err := e.Wait(); err != nil {
			t.Fatal(err)
		}
		if share := max(minWindow, 4*minWindow/(8-i)); most > share {
			t.Errorf("exec %d: %d bytes outstanding after a grant, more than its share %d", i, most, share)
		}
	}
	if n := c.open.Load(); n != 0 {
		t.Fatalf("%d streams still counted open", n)
	}
	if e := startHead(t, c, "1"); windowOf(e) != DefaultWindow {
		t.Errorf("a stream opened alone has a window of %d; want %d", windowOf(e), DefaultWindow)
	}
}
