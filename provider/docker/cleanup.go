package docker

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// discard removes a container this provider made and will not hand out (a
// create whose start failed). It tries within what is left of ctx's bound;
// what that cannot do goes on in the background (removeLater), so the call
// answers within its bound whatever the engine does.
func (p *Provider) discard(ctx context.Context, id, why string) {
	if ctx.Err() == nil {
		if _, err := p.removeWithin(ctx, id); err == nil {
			return
		}
	}
	p.removeLater(id, why)
}

// removeLater removes a container in the background: tries of timing.api
// each, for timing.cleanupMax in all, every failure logged. What it cannot
// remove is never lost: the container keeps its owner's labels, so
// list_owned shows it (stopped) and the host's reclaim, this session's or a
// later one's (docs/protocol.md §10.6), terminates it.
func (p *Provider) removeLater(id, why string) {
	log := p.log.With(zap.String("sandbox", id[:12]), zap.String("why", why))
	log.Warn("sandbox left half made; removing it in the background")
	p.removeBehind(id, log, "half-made sandbox", "list_owned shows it as stopped, for the host to terminate")
}

// removeBehind removes a container in the background: tries of timing.api
// each, for timing.cleanupMax in all, every failure logged; left says what
// becomes of a container it gives up on.
func (p *Provider) removeBehind(id string, log *zap.Logger, what, left string) {
	p.cleanups.Go(func() {
		deadline := time.Now().Add(p.timing.cleanupMax)
		pause := 100 * time.Millisecond
		for {
			_, err := p.removeWithin(p.life, id)
			if err == nil {
				log.Info(what + " removed")
				return
			}
			if p.life.Err() != nil || time.Now().Add(pause).After(deadline) {
				log.Warn(what+" not removed; "+left, zap.Error(err))
				return
			}
			log.Info(what+": removal failed; retrying", zap.Error(err), zap.Duration("in", pause))
			select {
			case <-p.life.Done():
			case <-time.After(pause):
			}
			pause = min(pause*2, 5*time.Second)
		}
	})
}

// awaitCleanups gives background removals up to timing.closeWait to finish,
// then ends them (each logs what it left) and waits for them to return.
func (p *Provider) awaitCleanups() {
	if p.endLife == nil {
		return // a Provider not made by newProvider has never run one
	}
	done := make(chan struct{})
	go func() { p.cleanups.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(p.timing.closeWait):
	}
	p.endLife()
	<-done
}
