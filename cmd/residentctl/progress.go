package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/resident-dev/resident/protocol"
)

// pullProgress shows sandbox/pull_progress: one redrawn bar on a terminal,
// and one plain line per status change otherwise (a log or CI output should
// not fill with carriage returns or byte counts).
type pullProgress struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	image    string
	layers   map[string]*layer
	seen     map[string]bool // plain mode: status lines already printed
	drawn    bool
	finished bool // done was called; late events are dropped
	lastDraw time.Time
}

type layer struct {
	phase          protocol.PullPhase
	current, total int64
}

func newPullProgress(w io.Writer) *pullProgress {
	f, ok := w.(*os.File)
	return &pullProgress{w: w, terminal: ok && isTerminal(f), layers: map[string]*layer{}, seen: map[string]bool{}}
}

// update is the client's OnPullProgress. Callbacks run off the call that
// caused them, so one may come after Create returned and done was called;
// it is dropped rather than drawn over the command's output.
func (p *pullProgress) update(pp protocol.PullProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.image = pp.Image
	if !p.terminal {
		// The provider's words, once per layer and step.
		key := pp.Layer + "\x00" + pp.Status
		if pp.Status != "" && !p.seen[key] {
			p.seen[key] = true
			fmt.Fprintf(p.w, "pull %s: %s\n", pp.Image, pp.Status)
		}
		return
	}
	if pp.Layer != "" {
		l := p.layers[pp.Layer]
		if l == nil {
			l = &layer{}
			p.layers[pp.Layer] = l
		}
		l.phase, l.current = pp.Phase, pp.Current
		if pp.Total > 0 {
			l.total = pp.Total
		}
		if isDone(l.phase) && l.total > 0 {
			l.current = l.total
		}
	}
	if time.Since(p.lastDraw) < 100*time.Millisecond && p.drawn {
		return
	}
	p.lastDraw = time.Now()
	p.drawn = true
	fmt.Fprintf(p.w, "\r\x1b[K%s", p.bar())
}

// done ends the bar's line; it is safe to call more than once.
func (p *pullProgress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finished = true
	if p.drawn {
		fmt.Fprintf(p.w, "\r\x1b[K%s\n", p.bar())
		p.drawn = false
	}
}

func (p *pullProgress) bar() string {
	var current, total int64
	var done int
	ids := make([]string, 0, len(p.layers))
	for id, l := range p.layers {
		ids = append(ids, id)
		current += l.current
		total += l.total
		if isDone(l.phase) {
			done++
		}
	}
	sort.Strings(ids)
	const width = 30
	filled := 0
	if total > 0 {
		filled = int(float64(width) * float64(current) / float64(total))
		filled = min(filled, width)
	}
	return fmt.Sprintf("pulling %s [%s%s] %s / %s, %d/%d layers",
		p.image, strings.Repeat("=", filled), strings.Repeat(" ", width-filled), size(current), size(total), done, len(ids))
}

// isDone: the layer's bytes are all there (extracting rereads them).
func isDone(phase protocol.PullPhase) bool {
	return phase == protocol.PullDownloaded || phase == protocol.PullComplete
}

func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
