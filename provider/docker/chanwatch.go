package docker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
)

// whileRunning runs op under a ctx that ends, with the sandbox's own
// reason as the error (conflict: stopped, paused; not_found), when the
// sandbox is found not running: at once when it stops (watchStop: the
// engine's wait, one more engine call) or, for an op slower than
// timing.startCheck, by one look at its state. A keeper behind a paused
// container or a stopped one never answers, and the call would otherwise
// wait for its whole bound.
func (p *Provider) whileRunning(ctx context.Context, id string, watchStop bool, op func(context.Context) error) error {
	octx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	notRunning := func() {
		if why := p.notRunning(context.WithoutCancel(octx), id); why != nil {
			cancel(why)
		}
	}
	if watchStop {
		wg.Go(func() {
			w := p.cli.ContainerWait(octx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
			select {
			case <-w.Result:
				notRunning()
				cancel(protocol.Errorf(protocol.KindConflict, "sandbox %s is not running", id[:12]))
			case <-w.Error:
			}
		})
	}
	wg.Go(func() {
		t := time.NewTimer(p.timing.startCheck)
		defer t.Stop()
		select {
		case <-octx.Done():
		case <-t.C:
			notRunning()
		}
	})
	err := op(octx)
	cancel(nil)
	wg.Wait()
	if err != nil && ctx.Err() == nil {
		var pe *protocol.Error
		if cause := context.Cause(octx); errors.As(cause, &pe) {
			return cause
		}
	}
	return err
}

// breakAll breaks every held channel (the engine stopped answering): their
// execs end transient, the next call reconnects.
func (h *holders) breakAll() {
	h.mu.Lock()
	set := make([]*chanHolder, 0, len(h.set))
	for _, ch := range h.set {
		set = append(set, ch)
	}
	h.mu.Unlock()
	for _, ch := range set {
		ch.mu.Lock()
		if ch.conn != nil {
			_ = ch.conn.Close()
		}
		ch.mu.Unlock()
	}
}

// held reports whether any channel is held.
func (h *holders) held() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.set) > 0
}

// watchEngine runs while the provider lives, from its first channel on:
// an attach stream through an engine that hangs (or a proxy in front of
// it) never ends, and the keeper sends nothing while an exec is silent, so
// the engine itself is asked. One that fails to answer for
// timing.engineGrace breaks every channel: their execs end transient (as
// the exec mode's do) instead of waiting forever.
func (p *Provider) watchEngine() {
	p.watchOnce.Do(func() {
		p.watchers.Go(func() {
			interval := max(p.timing.engineGrace/3, 10*time.Millisecond)
			var failingSince time.Time
			for {
				select {
				case <-p.life.Done():
					return
				case <-time.After(interval):
				}
				if !p.chans.held() {
					failingSince = time.Time{}
					continue
				}
				ctx, cancel := context.WithTimeout(p.life, p.timing.engineGrace)
				_, err := p.cli.Ping(ctx, client.PingOptions{})
				cancel()
				switch {
				case p.life.Err() != nil:
					return
				case err == nil:
					failingSince = time.Time{}
					continue
				case failingSince.IsZero():
					failingSince = time.Now()
				}
				if time.Since(failingSince) >= p.timing.engineGrace || errors.Is(err, context.DeadlineExceeded) {
					p.log.Warn("docker engine not answering; breaking the sandbox channels", zap.Error(err))
					p.chans.breakAll()
					failingSince = time.Time{}
				}
			}
		})
	})
}
