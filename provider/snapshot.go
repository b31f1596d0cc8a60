package provider

import (
	"context"

	"github.com/resident-dev/resident/protocol"
)

// Snapshotter is the optional ability to turn a sandbox's filesystem into
// something new sandboxes start from (capabilities.snapshot). Snapshots are
// owner-scoped like volumes: every call sees owner's own only, and another
// install's answers exactly as a missing one does. Names are validated by
// the resident (1-64 characters of A-Za-z0-9._-, starting with a letter
// or digit).
//
// Create takes spec.image protocol.SnapshotPrefix+NAME as owner's snapshot
// NAME; one of another install, or none, is not_found, and nothing is made.
type Snapshotter interface {
	// Snapshot records the running sandbox's filesystem (not its volumes)
	// as owner's snapshot name. A name in use is conflict.
	Snapshot(ctx context.Context, sandboxID string, owner Owner, name string) (protocol.Snapshot, error)
	ListSnapshots(ctx context.Context, owner Owner) ([]protocol.Snapshot, error)
	// DeleteSnapshot removes the name; sandboxes made from it keep
	// running. It reports whether the name existed (false: success too).
	DeleteSnapshot(ctx context.Context, owner Owner, name string) (bool, error)
}
