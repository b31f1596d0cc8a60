package protocol

import (
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

// allocated reports the bytes fn allocates (runtime.MemStats.TotalAlloc
// counts every allocation, freed or not, so a transient huge buffer shows).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A header that claims a huge body must be refused before anything of that
// size is allocated: the reader's memory is bounded by the frame limit plus
// its 64 KiB read buffer, whatever the host claims or sends.
func TestHostileFramesAllocateBoundedMemory(t *testing.T) {
	const slack = 256 << 10 // the bufio buffer and small strings
	limit := DefaultMaxFrameBytes
	cases := []struct {
		name   string
		input  func() io.Reader
		budget uint64
	}{
		{"length 2^31", func() io.Reader { return strings.NewReader("Content-Length: 2147483648\r\n\r\n") }, slack},
		{"length 2^31 with leading zeros", func() io.Reader { return strings.NewReader("Content-Length: 0002147483648\r\n\r\n") }, slack},
		{"length 2^63-1", func() io.Reader { return strings.NewReader("Content-Length: 9223372036854775807\r\n\r\n") }, slack},
		{"length 2^63", func() io.Reader { return strings.NewReader("Content-Length: 9223372036854775808\r\n\r\n") }, slack},
		{"length 2^64 and beyond", func() io.Reader {
			return strings.NewReader("Content-Length: 1" + strings.Repeat("0", 40) + "\r\n\r\n")
		}, slack},
		{"limit+1 with the body sent", func() io.Reader {
			return io.MultiReader(strings.NewReader("Content-Length: 16777217\r\n\r\n"), io.LimitReader(zeros{}, int64(limit)+1))
		}, slack},
		{"a 64 MiB header line", func() io.Reader {
			return io.MultiReader(strings.NewReader("X-Junk: "), io.LimitReader(zeros{}, 64<<20))
		}, slack},
		{"31 maximal header lines then garbage", func() io.Reader {
			line := "X: " + strings.Repeat("a", MaxHeaderLineBytes-3) + "\r\n"
			return io.MultiReader(strings.NewReader(strings.Repeat(line, MaxHeaderLines+5)), io.LimitReader(zeros{}, 8<<20))
		}, slack},
		// A body at the limit is allocated once; a truncated one then EOF
		// costs no more than that.
		{"truncated body at the limit then EOF", func() io.Reader {
			return io.MultiReader(strings.NewReader("Content-Length: 16777216\r\n\r\n{\"jsonrpc\""), io.LimitReader(zeros{}, 1000))
		}, uint64(limit) + slack},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			in := c.input()
			got := allocated(func() { _, err = NewFrameReader(in, limit).Read() })
			if !errors.Is(err, ErrFrame) {
				t.Fatalf("want a frame error, got %v", err)
			}
			t.Logf("allocated %d bytes (budget %d): %v", got, c.budget, err)
			if got > c.budget {
				t.Fatalf("allocated %d bytes, over the budget of %d", got, c.budget)
			}
		})
	}
	// The same, counted as allocations: refusing a 2^31 claim is a handful
	// of small allocations, not one per byte or per chunk.
	allocs := testing.AllocsPerRun(20, func() {
		_, _ = NewFrameReader(strings.NewReader("Content-Length: 2147483648\r\n\r\n"), limit).Read()
	})
	if allocs > 32 {
		t.Fatalf("%v allocations to refuse a 2^31 claim", allocs)
	}
}

// A body at the limit is read whole; one byte over is refused; a body cut
// short by EOF is a frame error, never a short body.
func TestBodyAtLimitAndTruncated(t *testing.T) {
	const limit = 1 << 20
	body := strings.Repeat("x", limit)
	got, err := NewFrameReader(strings.NewReader("Content-Length: 1048576\r\n\r\n"+body), limit).Read()
	if err != nil || len(got) != limit {
		t.Fatalf("body at the limit: %d bytes, %v", len(got), err)
	}
	for _, cut := range []int{0, 1, limit / 2, limit - 1} {
		_, err := NewFrameReader(strings.NewReader("Content-Length: 1048576\r\n\r\n"+body[:cut]), limit).Read()
		if !errors.Is(err, ErrFrame) || !strings.Contains(err.Error(), "body ended") {
			t.Fatalf("body cut at %d then EOF: %v", cut, err)
		}
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
