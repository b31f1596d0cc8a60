package resident

import "testing"

// TestPumpBufferFitsReads: the buffer doubles on full reads up to its cap,
// holds its size through a burst with a few short reads, and halves after
// a run of small ones.
func TestPumpBufferFitsReads(t *testing.T) {
	if pumpMinBufferBytes<<(pumpSizeClasses-1) != pumpBufferBytes {
		t.Fatalf("%d size classes do not span %d to %d bytes", pumpSizeClasses, pumpMinBufferBytes, pumpBufferBytes)
	}
	b := newPumpBuffer()
	defer b.release()
	for _, step := range []struct {
		read, want int
	}{
		{4 << 10, 8 << 10},
		{8 << 10, 16 << 10},
		{16 << 10, 32 << 10},
		{32 << 10, 64 << 10},
		{64 << 10, 64 << 10}, // the cap
		{100, 64 << 10},      // one short read in a burst
		{64 << 10, 64 << 10},
	} {
		b.fit(step.read)
		if len(b.buf) != step.want {
			t.Fatalf("after a read of %d: buffer %d, want %d", step.read, len(b.buf), step.want)
		}
	}
	for range pumpShrinkAfter {
		b.fit(100)
	}
	if len(b.buf) != 32<<10 {
		t.Fatalf("after %d small reads: buffer %d, want %d", pumpShrinkAfter, len(b.buf), 32<<10)
	}
	for range 10 * pumpShrinkAfter {
		b.fit(1)
	}
	if len(b.buf) != pumpMinBufferBytes {
		t.Fatalf("a trickle leaves a buffer of %d, want %d", len(b.buf), pumpMinBufferBytes)
	}
}

// TestPumpBufferPoolsKeepSizes: a buffer released at one size is never
// handed out for another, whatever the pools hold.
func TestPumpBufferPoolsKeepSizes(t *testing.T) {
	for size := pumpMinBufferBytes; size <= pumpBufferBytes; size *= 2 {
		putPumpBuffer(make([]byte, size))
	}
	for size := pumpMinBufferBytes; size <= pumpBufferBytes; size *= 2 {
		if b := getPumpBuffer(size); len(b) != size {
			t.Fatalf("getPumpBuffer(%d) has %d bytes", size, len(b))
		}
	}
}
