package local

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// arm starts the lifetime timer of a sandbox this instance knows about.
func (p *Provider) arm(id string, deadline *time.Time) {
	if deadline == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if old := p.timers[id]; old != nil {
		old.Stop()
	}
	p.timers[id] = time.AfterFunc(deadline.Sub(p.now()), func() { p.expire(id) })
}

func (p *Provider) expire(id string) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	delete(p.timers, id)
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()
	// lookup removes the sandbox if it is due; if the clock says it is not
	// yet (a test clock), arm again.
	if m, err := p.lookup(id); err == nil {
		p.arm(id, m.ExpiresAt)
	}
}

// recover finishes what a crashed instance left: sandboxes half removed
// (killed and deleted now), creates cut short (deleted once clearly stale,
// since another live instance may be creating right now), and lifetimes
// (expired sandboxes removed, the rest get timers).
func (p *Provider) recover() {
	if entries, err := os.ReadDir(p.trash); err == nil {
		for _, e := range entries {
			p.reap(filepath.Join(p.trash, e.Name()), nil)
		}
	}
	entries, err := os.ReadDir(p.sandboxes)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, stagingName) {
			if info, err := e.Info(); err == nil && p.now().Sub(info.ModTime()) > 10*time.Minute {
				_ = removeTree(filepath.Join(p.sandboxes, name))
			}
			continue
		}
		if m, err := p.lookup(name); err == nil {
			p.arm(name, m.ExpiresAt)
		}
	}
}
