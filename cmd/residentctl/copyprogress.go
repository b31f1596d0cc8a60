package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// copyProgress draws one redrawn line per file on a terminal and nothing
// when stderr is not one (a pipe or a log gets no carriage returns).
type copyProgress struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	name     string
	total    int64 // -1: unknown
	current  int64
	lastDraw time.Time
	drawn    bool
}

func newCopyProgress(w io.Writer) *copyProgress {
	f, ok := w.(*os.File)
	return &copyProgress{w: w, terminal: ok && isTerminal(f)}
}

func (p *copyProgress) start(name string, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.name, p.total, p.current = name, total, 0
}

func (p *copyProgress) update(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.current = n
	if !p.terminal || time.Since(p.lastDraw) < 100*time.Millisecond {
		return
	}
	p.draw()
}

func (p *copyProgress) draw() {
	p.lastDraw, p.drawn = time.Now(), true
	if p.total < 0 {
		fmt.Fprintf(p.w, "\r\x1b[K%s %s", p.name, size(p.current))
		return
	}
	const width = 30
	filled := width
	if p.total > 0 {
		filled = min(width, int(float64(width)*float64(p.current)/float64(p.total)))
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s [%s%s] %s / %s", p.name, strings.Repeat("=", filled), strings.Repeat(" ", width-filled), size(p.current), size(p.total))
}

// finish ends the current file's line.
func (p *copyProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal && p.drawn {
		p.draw()
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

func (p *copyProgress) done() { p.finish() }
