package main

import (
	"fmt"
	"time"
)

// localStreamRSS: the resident's idle RSS with a local sandbox, and its
// peak RSS while n execs of that sandbox stream at once, every byte through
// the keeper channel, the scrubber (20 credentials) and base64 frames.
func (b *bench) localStreamRSS() ([]row, error) {
	p, sandbox, cleanup, err := b.localResident()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	idle, err := procStatusKB(p.pid, "VmRSS")
	if err != nil {
		return nil, err
	}
	n, size := b.scale(100, 20), b.scale(8, 1)<<20
	before := p.payload.Load()
	start := time.Now()
	_, _, err = fanOut(n, func() error { return p.exec(sandbox, "head", "-c", fmt.Sprint(size), "/dev/zero") })
	if err != nil {
		return nil, err
	}
	wall := time.Since(start)
	if got := p.payload.Load() - before; got != int64(n*size) {
		return nil, fmt.Errorf("%d streams carried %d bytes, not %d", n, got, n*size)
	}
	hwm, err := procStatusKB(p.pid, "VmHWM")
	if err != nil {
		return nil, err
	}
	return []row{
		{figure: "extra: local idle RSS after `initialize` and one sandbox", ours: mb(idle), goal: "≤ 12 MB", verdict: verdict(idle <= 12*1024)},
		{figure: fmt.Sprintf("extra: local peak RSS, %d concurrent streaming execs (%d MB in %s)", n, n*size>>20, wall.Round(time.Millisecond)),
			ours: mb(hwm), goal: "≤ 30 MB", verdict: verdict(hwm <= 30*1024)},
	}, nil
}
