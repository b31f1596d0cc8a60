package resident

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// reclaim adopts the idle members this install's earlier residents left
// (one killed with a full pool leaves them all): each joins the pool its
// mark names, to be handed out to the next create of that spec and tags,
// and is removed when its own max idle time has passed, as if this
// resident had made it. A stopped member is removed at once. Runs once,
// in the background, after initialize.
func (ps *pools) reclaim() {
	ps.work.Add(1)
	go func() {
		defer ps.work.Done()
		defer close(ps.reclaimed)
		ctx, cancel := context.WithTimeout(ps.ctx, time.Minute)
		defer cancel()
		ps.mu.Lock()
		owner := ps.owner
		ps.mu.Unlock()
		idle, err := ps.prov.ListIdle(ctx, owner)
		if err != nil {
			if ps.ctx.Err() == nil {
				ps.log.Warn("idle pool members not listed; those of earlier residents stay until the next one", zap.Error(err))
			}
			return
		}
		ps.mu.Lock()
		defer ps.mu.Unlock()
		for _, m := range idle {
			expires := m.CreatedAt.Add(m.Mark.MaxIdle)
			switch {
			case ps.closed:
				return
			case ps.has(m.SandboxID):
				continue // made by this resident since it started
			case !m.Running || !ps.now().Before(expires):
				ps.removeLocked(m.SandboxID, "an earlier resident left it stopped or past its max_idle_s")
				continue
			}
			pl := ps.poolLocked(m.Mark.Key)
			if pl.maxIdle == 0 {
				pl.maxIdle = m.Mark.MaxIdle
			}
			ps.addLocked(pl, m.SandboxID, expires)
			ps.log.Info("pool member adopted", zap.String("sandbox_id", m.SandboxID), zap.String("pool", m.Mark.Key))
		}
	}()
}

func (ps *pools) has(id string) bool {
	for _, pl := range ps.byKey {
		for _, m := range pl.ready {
			if m.id == id {
				return true
			}
		}
	}
	return false
}

// close stops the pools: no member is made or handed out after it. The
// ready members stay for the next resident of this install, which adopts
// them (residentctl spawns one per command), and each is removed by its own
// max idle time by whichever resident finds it then. Members still being
// made get the grace period to be; past it their creates are cancelled.
func (ps *pools) close(grace time.Duration) bool {
	ps.mu.Lock()
	ps.closed = true
	for _, pl := range ps.byKey {
		for _, m := range pl.ready {
			m.timer.Stop()
		}
		if pl.hold != nil {
			pl.hold.Stop() // refillLocked would find the pools closed
			pl.hold = nil
		}
		pl.ready = nil
		for _, w := range pl.waiters {
			close(w) // a miss: the create goes on without the pool
		}
		pl.waiters = nil
	}
	ps.mu.Unlock()
	done := make(chan struct{})
	go func() { ps.work.Wait(); close(done) }()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	defer ps.cancel()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	}
}
