package resident

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
}

type member struct {
	id      string
	expires time.Time
	timer   *time.Timer
}

// maxFilling bounds one pool's creates in flight, so a large pool does not
// take every core of the engine's host at once.
const maxFilling = 4

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
// recording what the host asked for and refilling behind. ok=false is a
// miss: the caller creates the sandbox itself.
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
	defer ps.refill(pl)
	for len(pl.ready) > 0 {
		m := pl.ready[0]
		pl.ready = pl.ready[1:]
		m.timer.Stop()
		ps.mu.Unlock()
		err := ps.prov.Claim(ctx, m.id)
		ps.mu.Lock()
		if err == nil {
			ps.mu.Unlock()
			return m.id, true
		}
		// Not found: another resident of this install handed it out, or
		// it is gone. Anything else is left to a later reclaim.
		ps.log.Info("pool member not handed out", zap.String("sandbox_id", m.id), zap.Error(err))
	}
	ps.mu.Unlock()
	return "", false
}

func (ps *pools) poolLocked(key string) *pool {
	pl := ps.byKey[key]
	if pl == nil {
		pl = &pool{key: key}
		ps.byKey[key] = pl
	}
	return pl
}

// refill starts creates until the pool has size members ready or coming.
func (ps *pools) refill(pl *pool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
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
			ps.addLocked(pl, id, ps.now().Add(mark.MaxIdle))
			ps.mu.Unlock()
			ps.log.Info("pool member ready", zap.String("sandbox_id", id), zap.String("pool", pl.key))
			ps.refill(pl)
		}()
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
