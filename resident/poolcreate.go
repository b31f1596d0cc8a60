package resident

import (
	"context"

	"github.com/resident-dev/resident/protocol"
)

// checkPool validates a create's pool request and fills its default.
func (s *session) checkPool(p *protocol.CreateParams) error {
	want := p.Pool
	if want == nil {
		return nil
	}
	switch {
	case s.pools == nil:
		return invalid("pool: provider %s cannot keep warm pools (capabilities.pool is false)", s.prov.Info().Name)
	case want.Size < 1 || want.Size > protocol.MaxPoolSize:
		return invalid("pool.size must be 1-%d", protocol.MaxPoolSize)
	case want.MaxIdleS < 0 || want.MaxIdleS > protocol.MaxPoolMaxIdleS:
		return invalid("pool.max_idle_s must be 0-%d", protocol.MaxPoolMaxIdleS)
	case p.Spec.LifetimeS > 0:
		// A member's lifetime would run while it waits, so the host would
		// get a sandbox with less of it left than it asked for.
		return invalid("pool cannot be combined with spec.lifetime_s: a pooled sandbox's lifetime would start before it is handed out")
	}
	if want.MaxIdleS == 0 {
		want.MaxIdleS = protocol.DefaultPoolMaxIdleS
	}
	return nil
}

// createFromPool hands out a ready member, or creates the sandbox as a
// create without pool would; either way the pool refills behind.
func (s *session) createFromPool(ctx context.Context, p *protocol.CreateParams) (string, error) {
	if id, ok := s.pools.take(ctx, p.Spec, p.Tags, *p.Pool); ok {
		return id, nil
	}
	return s.prov.Create(ctx, p.Spec, s.owner, p.Tags)
}
