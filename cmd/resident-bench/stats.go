package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// samples are durations with the warm-up already dropped.
type samples []time.Duration

func (s samples) quantile(q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	sorted := slices.Clone(s)
	slices.Sort(sorted)
	i := int(q*float64(len(sorted)-1) + 0.5)
	return sorted[i]
}

func (s samples) median() time.Duration { return s.quantile(0.5) }
func (s samples) p99() time.Duration    { return s.quantile(0.99) }

// dropWarmup keeps what follows the first tenth (at least one sample).
func dropWarmup(s samples) samples {
	if len(s) < 3 {
		return s
	}
	return s[max(1, len(s)/10):]
}

// timed runs fn n times plus a warm-up and returns the kept durations.
func timed(n int, fn func() error) (samples, error) {
	var out samples
	for range n + max(1, n/10) {
		start := time.Now()
		if err := fn(); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return dropWarmup(out), nil
}

// timedValues collects n durations that fn measures itself.
func timedValues(n int, fn func() (time.Duration, error)) (samples, error) {
	var out samples
	for range n + max(1, n/10) {
		d, err := fn()
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return dropWarmup(out), nil
}

// interleaved runs a and b alternately, so both see the same noise.
func interleaved(n int, a, b func() error) (samples, samples, error) {
	var sa, sb samples
	for range n + max(1, n/10) {
		start := time.Now()
		if err := a(); err != nil {
			return nil, nil, err
		}
		sa = append(sa, time.Since(start))
		start = time.Now()
		if err := b(); err != nil {
			return nil, nil, err
		}
		sb = append(sb, time.Since(start))
	}
	return dropWarmup(sa), dropWarmup(sb), nil
}

// interleavedN is interleaved for any number of functions: round after
// round, each runs once in turn.
func interleavedN(n int, fns ...func() error) ([]samples, error) {
	return interleavedBlocks(n, 1, fns...)
}

// interleavedBlocks is interleavedN in blocks: each function runs block
// times in a row, then the next, round after round. For operations whose
// cost outlives their answer (a raw docker exec leaves containerd and runc
// busy for milliseconds after it answers), alternating one by one measures
// each inside the other's tail; blocks still share the noise of seconds.
func interleavedBlocks(n, block int, fns ...func() error) ([]samples, error) {
	out := make([]samples, len(fns))
	total := n + max(1, n/10)
	for done := 0; done < total; done += block {
		for i, fn := range fns {
			for range min(block, total-done) {
				start := time.Now()
				if err := fn(); err != nil {
					return nil, err
				}
				out[i] = append(out[i], time.Since(start))
			}
		}
	}
	for i := range out {
		out[i] = dropWarmup(out[i])
	}
	return out, nil
}

// row is one line of the table.
type row struct {
	figure  string
	ours    string
	raw     string
	cli     string
	py      string
	ratio   string
	goal    string
	verdict string // "yes", "NO", or "" when there is nothing to judge
}

func verdict(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

func ms(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// us is a signed difference in microseconds.
func us(d time.Duration) string { return fmt.Sprintf("%+d µs", d.Microseconds()) }

func medP99(s samples) string {
	if len(s) == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (p99 %s)", ms(s.median()), ms(s.p99()))
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func mbps(bytes int64, d time.Duration) float64 {
	if d == 0 {
		return 0
	}
	return float64(bytes) / d.Seconds() / 1e6
}

// printTable writes rows as a Markdown table, aligned for a terminal too.
func printTable(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	cells := func(c ...string) {
		fmt.Fprintf(tw, "| %s\t|\n", strings.Join(c, "\t| "))
	}
	cells("figure", "ours", "raw", "docker CLI", "docker-py", "ratio", "goal", "met")
	cells("---", "---", "---", "---", "---", "---", "---", "---")
	for _, r := range rows {
		cells(r.figure, dash(r.ours), dash(r.raw), dash(r.cli), dash(r.py), dash(r.ratio), r.goal, dash(r.verdict))
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
