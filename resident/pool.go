package resident

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// pools are the session's warm pools, one per spec and tags. Members are
// made in the background through the provider's Pooler and handed out by
// Claim; the provider keeps them out of list_owned until then, so a host
// sees only what it was given. Every decision about a member rests on what
// the member itself records (its pool key and max idle time), so a resident
// that never made it, because the one that did was killed, can adopt it or
// remove it all the same (reclaim).
type pools struct {
	prov  provider.Pooler
	term  func(ctx context.Context, id string) (bool, error)
	owner provider.Owner
	log   *zap.Logger
	now   func() time.Time

	// ctx ends the background work on close; work counts it.
	ctx    context.Context
	cancel context.CancelFunc
	work   sync.WaitGroup

	// reclaimed is closed once the members earlier residents left are
	// adopted (or could not be listed): a create waits for it, so that the
	// first one after a restart is handed one of them.
	reclaimed chan struct{}

	mu     sync.Mutex
	byKey  map[string]*pool
	closed bool
}

// pool is one spec+tags. size is what the host last asked for; 0 for a
// pool known only from adopted members, which is never refilled.
type pool struct {
	key     string
	spec    protocol.Spec
	tags    map[string]string
	size    int
	maxIdle time.Duration
	ready   []member // oldest first
	filling int      // CreateIdle calls in flight
	// hold is a hand-out's refill, waiting out refillHold.
	hold *time.Timer
	// waiters are creates that found none ready, each waiting for one of
	// the members being made (fewer than filling), first come first served.
	// A channel closed is a miss.
	waiters []chan made
}

// made is a member just made, for a waiter.
type made struct {
	id      string
	expires time.Time
}

type member struct {
	id      string
	expires time.Time
	timer   *time.Timer
}

// maxFilling bounds one pool's creates in flight, so a large pool does not
// take every core of the engine's host at once. Most of a create is the
// engine's start, and the engine overlaps starts well: on the 2-core test
// machine 8 in flight made 2.2x the containers per second of one at a
// time, 4 in flight 1.5x (docs/performance.md).
const maxFilling = 8

func newPools(prov provider.Pooler, term func(context.Context, string) (bool, error), log *zap.Logger, now func() time.Time) *pools {
	ctx, cancel := context.WithCancel(context.Background())
	return &pools{prov: prov, term: term, log: log.Named("pool"), now: now, ctx: ctx, cancel: cancel, byKey: map[string]*pool{}, reclaimed: make(chan struct{})}
}

// start binds the pools to the install initialize named and adopts what
// earlier residents of it left.
func (ps *pools) start(owner provider.Owner) {
	ps.mu.Lock()
	ps.owner = owner
	ps.mu.Unlock()
	ps.reclaim()
}

// poolKey names a pool by its spec and tags: a member made for one is
// exactly what a create with both asks for. A digest, so that nothing of the
// spec (its env may hold secrets) is written into the provider's marks.
func poolKey(spec protocol.Spec, tags map[string]string) string {
	b, _ := json.Marshal(struct {
		Spec protocol.Spec     `json:"spec"`
		Tags map[string]string `json:"tags"`
	}{spec, tags})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// take hands out a ready member of the pool for spec and tags, after
// recording what the host asked for and refilling behind. With none ready
// it waits for the first of the members being made, when more are being
// made than creates already wait for them: that one is ahead of any the
// caller could start, and the engine makes one sandbox fewer. ok=false is
// a miss: the caller creates the sandbox itself.
func (ps *pools) take(ctx context.Context, spec protocol.Spec, tags map[string]string, want protocol.PoolParams) (id string, ok bool) {
	key := poolKey(spec, tags)
	select {
	case <-ps.reclaimed:
	case <-ctx.Done():
		return "", false
	}
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return "", false
	}
	pl := ps.poolLocked(key)
	pl.spec, pl.tags, pl.size = spec, tags, want.Size
	pl.maxIdle = time.Duration(want.MaxIdleS) * time.Second
	for len(pl.ready) > 0 {
		m := pl.ready[0]
		pl.ready = pl.ready[1:]
		m.timer.Stop()
		ps.mu.Unlock()
		// The hand-out first, the refill after: the claim is the one
		// engine call the host waits for, and its first exec comes next.
		if ps.claim(ctx, m.id) {
			ps.refillAfterHandout(pl)
			return m.id, true
		}
		ps.refill(pl)
		ps.mu.Lock()
	}
	ps.refillLocked(pl)
	if pl.filling <= len(pl.waiters) {
		ps.mu.Unlock()
		return "", false
	}
	w := make(chan made, 1)
	pl.waiters = append(pl.waiters, w)
	ps.mu.Unlock()
	ps.log.Debug("create waits for a pool member being made", zap.String("pool", key))
	select {
	case m, ok := <-w:
		if ok && ps.claim(ctx, m.id) {
			return m.id, true
		}
		return "", false
	case <-ctx.Done():
		ps.mu.Lock()
		defer ps.mu.Unlock()
		if i := slices.Index(pl.waiters, w); i >= 0 {
			pl.waiters = slices.Delete(pl.waiters, i, i+1)
			return "", false
		}
		// Made for this create just as it gave up: it waits for the next.
		if m, ok := <-w; ok && !ps.closed {
			ps.addLocked(pl, m.id, m.expires)
		}
		return "", false
	}
}

// claim hands a member out through the provider.
func (ps *pools) claim(ctx context.Context, id string) bool {
	err := ps.prov.Claim(ctx, id)
	if err != nil {
		// Not found: another resident of this install handed it out, or
		// it is gone. Anything else is left to a later reclaim.
		ps.log.Info("pool member not handed out", zap.String("sandbox_id", id), zap.Error(err))
	}
	return err == nil
}

func (ps *pools) poolLocked(key string) *pool {
	pl := ps.byKey[key]
	if pl == nil {
		pl = &pool{key: key}
		ps.byKey[key] = pl
	}
	return pl
}

// refillHold is how long the refill behind a hand-out waits: a member's
// create is mostly the engine's start of a container, which takes both
// cores of a small engine host for a while, and the host's first exec on
// the sandbox just handed out comes right after the hand-out. Started at
// once, the refill doubled that exec's time (docs/performance.md). A
// create that finds the pool empty meanwhile starts the refill itself.
const refillHold = 100 * time.Millisecond

// refillAfterHandout refills pl once refillHold has passed.
func (ps *pools) refillAfterHandout(pl *pool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed || pl.hold != nil {
		return // the one waiting refills for this hand-out too
	}
	pl.hold = time.AfterFunc(refillHold, func() {
		ps.mu.Lock()
		defer ps.mu.Unlock()
		pl.hold = nil
		ps.refillLocked(pl)
	})
}

// refill starts creates until the pool has size members ready or coming.
func (ps *pools) refill(pl *pool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.refillLocked(pl)
}

func (ps *pools) refillLocked(pl *pool) {
	for !ps.closed && len(pl.ready)+pl.filling < pl.size && pl.filling < maxFilling {
		pl.filling++
		mark := provider.PoolMark{Key: pl.key, MaxIdle: pl.maxIdle}
		spec, tags, owner := pl.spec, pl.tags, ps.owner
		ps.work.Add(1)
		go func() {
			defer ps.work.Done()
			id, err := ps.prov.CreateIdle(ps.ctx, spec, owner, tags, mark)
			ps.mu.Lock()
			pl.filling--
			switch {
			case err != nil:
				ps.missLocked(pl)
				ps.mu.Unlock()
				// No retry: a spec that cannot be made would loop. The
				// next create of this pool tries again.
				if ps.ctx.Err() == nil {
					ps.log.Warn("pool member not created", zap.String("pool", pl.key), zap.Error(err))
				}
				return
			case ps.closed:
				ps.mu.Unlock()
				return // ready for the next resident (close)
			}
			expires := ps.now().Add(mark.MaxIdle)
			if len(pl.waiters) > 0 {
				w := pl.waiters[0]
				pl.waiters = pl.waiters[1:]
				w <- made{id: id, expires: expires}
			} else {
				ps.addLocked(pl, id, expires)
			}
			ps.mu.Unlock()
			ps.log.Info("pool member ready", zap.String("sandbox_id", id), zap.String("pool", pl.key))
			ps.refill(pl)
		}()
	}
}

// missLocked tells the waiters a failed create left without a member that
// they missed: they create their own.
func (ps *pools) missLocked(pl *pool) {
	for len(pl.waiters) > pl.filling {
		last := len(pl.waiters) - 1
		close(pl.waiters[last])
		pl.waiters = pl.waiters[:last]
	}
}

// addLocked makes id a ready member that is removed at expires unless it
// is handed out first.
func (ps *pools) addLocked(pl *pool, id string, expires time.Time) {
	m := member{id: id, expires: expires}
	m.timer = time.AfterFunc(time.Until(expires), func() { ps.expire(pl, id) })
	pl.ready = append(pl.ready, m)
}

func (ps *pools) expire(pl *pool, id string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for i, m := range pl.ready {
		if m.id == id {
			pl.ready = append(pl.ready[:i:i], pl.ready[i+1:]...)
			ps.removeLocked(id, "it was idle for its pool's max_idle_s")
			return
		}
	}
}

// removeLocked removes an idle member in the background. It claims the
// member first: another resident of this install may have adopted it and
// handed it out, and a sandbox a host holds is never removed under it.
func (ps *pools) removeLocked(id, why string) {
	ps.work.Add(1)
	go func() {
		defer ps.work.Done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ps.ctx), time.Minute)
		defer cancel()
		if err := ps.prov.Claim(ctx, id); err != nil {
			ps.log.Info("pool member not removed: it is no longer idle", zap.String("sandbox_id", id), zap.Error(err))
			return
		}
		if _, err := ps.term(ctx, id); err != nil {
			ps.log.Warn("pool member not removed", zap.String("sandbox_id", id), zap.String("why", why), zap.Error(err))
			return
		}
		ps.log.Info("pool member removed", zap.String("sandbox_id", id), zap.String("why", why))
	}()
}
