package protocol

import "time"

// SnapshotPrefix marks a spec.image that names a snapshot of this install:
// "snapshot:NAME".
const SnapshotPrefix = "snapshot:"

// SnapshotParams name a sandbox and the snapshot to make of its filesystem.
type SnapshotParams struct {
	SandboxID string `json:"sandbox_id"`
	Name      string `json:"name"`
}

// Snapshot is one of this install's snapshots.
type Snapshot struct {
	Name string `json:"name"`
	// Image is what spec.image names it by ("snapshot:NAME").
	Image     string    `json:"image"`
	CreatedAt time.Time `json:"created_at"`
	SizeBytes int64     `json:"size_bytes"`
}

// ListSnapshotsResult lists this install's snapshots, oldest first.
type ListSnapshotsResult struct {
	Snapshots []Snapshot `json:"snapshots"`
}

// SnapshotNameParams name one snapshot.
type SnapshotNameParams struct {
	Name string `json:"name"`
}

// DeleteSnapshotResult says whether the snapshot existed.
type DeleteSnapshotResult struct {
	Existed bool `json:"existed"`
}
