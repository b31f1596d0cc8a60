package local

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"
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
	m, err := p.load(id)
	switch {
	case err != nil: // terminated meanwhile
	case m.expired(p.now()):
		p.end(id)
	default: // a test clock says not yet
		p.arm(id, m.ExpiresAt)
	}
}

// end stops everything running in an expired sandbox and keeps its files:
// it stays listed as expired until it is terminated, as a stopped container
// does. Once ended (under p.mu), no exec can start in it (see start).
// Idempotent; an earlier instance's processes are found by working
// directory, this instance's by process group as well.
func (p *Provider) end(id string) {
	p.mu.Lock()
	if p.ended[id] {
		p.mu.Unlock()
		return
	}
	p.ended[id] = true
	// Copies: exits edit the live maps, and this one stays registered.
	procs, groups, init := maps.Clone(p.running[id]), maps.Clone(p.groups[id]), p.inits[id]
	if t := p.timers[id]; t != nil {
		t.Stop()
		delete(p.timers, id)
	}
	p.mu.Unlock()
	for pr := range procs {
		pr.killTree()
	}
	if init == nil {
		init = p.strayInit(p.sandboxDir(id))
	}
	if init != nil {
		init.kill(false) // its keeper ends at the lifetime by itself too: this is for a clock that says so first
	}
	killWhere(inSandbox(p.sandboxDir(id), groups))
	p.log.Info("sandbox expired", zap.String("sandbox_id", id))
}

// recover finishes what a crashed instance left: sandboxes half removed
// (killed and deleted now), creates cut short (deleted once clearly stale,
// since another live instance may be creating right now), and lifetimes
// (expired sandboxes ended, the rest get timers).
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
		m, err := p.load(name)
		switch {
		case err != nil:
		case m.expired(p.now()):
			p.end(name)
		default:
			p.arm(name, m.ExpiresAt)
		}
	}
}
