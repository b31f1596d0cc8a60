package provider

import (
	"context"
	"time"

	"github.com/resident-dev/resident/protocol"
)

// Pooler is the optional ability to keep sandboxes ready before a host asks
// for them (capabilities.pool). The resident runs the pools; the provider
// only makes members, finds them again and hands them out.
//
// A member is a sandbox made exactly as Create would make it, with the same
// spec, owner and host tags, plus a mark in the provider's reserved namespace
// that says "idle member of pool Key". Hosts cannot forge the mark (their
// tags may not use the namespace) and never see it. ListOwned does not list
// an idle member; Claim turns it into an ordinary sandbox, after which
// nothing tells it from one Create made.
//
// Tags cannot change once a Docker container exists, so a member carries its
// final host tags from the start: pools are keyed by spec and tags together.
type Pooler interface {
	// CreateIdle makes a sandbox as Create does, marked as an idle member
	// of mark.Key. ListOwned does not list it until Claim.
	CreateIdle(ctx context.Context, spec protocol.Spec, owner Owner, tags map[string]string, mark PoolMark) (string, error)
	// ListIdle returns owner's idle members of every pool (Owner.Owns, as
	// ListOwned), with the marks they were made with, so that a resident
	// can adopt the members a dead one left, or remove them.
	ListIdle(ctx context.Context, owner Owner) ([]IdleSandbox, error)
	// Claim makes an idle member an ordinary sandbox of its owner. Of
	// concurrent claims of one member exactly one succeeds; a member
	// already claimed, removed or not idle is not_found.
	Claim(ctx context.Context, sandboxID string) error
}

// PoolMark is what a member records about its pool, so that a resident
// that never saw the pool can still decide what to do with the member.
type PoolMark struct {
	// Key names the pool: a digest of the spec and tags (never secret
	// material: the resident hashes them).
	Key string
	// MaxIdle is how long the member may wait unclaimed before any
	// resident of its owner removes it.
	MaxIdle time.Duration
}

// IdleSandbox is an unclaimed pool member.
type IdleSandbox struct {
	SandboxID string
	Mark      PoolMark
	CreatedAt time.Time
	// Running is false for a member that stopped (its container died): it
	// is removed, never handed out.
	Running bool
}
