package resident

import (
	"context"
	"strings"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
)

// Snapshots (§4.16): the provider does the work, owner-scoped; the resident
// checks names and ownership and refuses what the provider cannot do, by
// the capability's name.

func (s *session) snapshotter() error {
	if s.snapshots == nil {
		return invalid("provider %s cannot take snapshots (capabilities.snapshot is false)", s.prov.Info().Name)
	}
	return nil
}

// checkSnapshotName: 1-64 of A-Za-z0-9._-, starting with a letter or digit
// (an image tag may not start with "." or "-").
func checkSnapshotName(field, name string) error {
	if !validInstallID(name) || name[0] == '.' || name[0] == '-' {
		return invalid("%s must be 1-64 characters of A-Za-z0-9._-, starting with a letter or digit", field)
	}
	return nil
}

// checkSnapshotImage refuses spec.image "snapshot:NAME" where it cannot be
// honoured, before anything is made.
func (s *session) checkSnapshotImage(image string) error {
	name, ok := strings.CutPrefix(image, protocol.SnapshotPrefix)
	if !ok {
		return nil
	}
	if err := s.snapshotter(); err != nil {
		return err
	}
	return checkSnapshotName("spec.image's snapshot name", name)
}

func takeSnapshot(ctx context.Context, s *session, _ *call, p *protocol.SnapshotParams) (*protocol.Snapshot, error) {
	if err := s.snapshotter(); err != nil {
		return nil, err
	}
	if err := checkID("sandbox_id", p.SandboxID); err != nil {
		return nil, err
	}
	if err := checkSnapshotName("name", p.Name); err != nil {
		return nil, err
	}
	if err := s.checkOwned(ctx, p.SandboxID); err != nil {
		return nil, err
	}
	snap, err := s.snapshots.Snapshot(ctx, p.SandboxID, s.owner, p.Name)
	if err != nil {
		return nil, err
	}
	s.log.Info("snapshot taken", zap.String("sandbox_id", p.SandboxID), zap.String("name", p.Name))
	return &snap, nil
}

func listSnapshots(ctx context.Context, s *session, _ *call, _ *struct{}) (*protocol.ListSnapshotsResult, error) {
	if err := s.snapshotter(); err != nil {
		return nil, err
	}
	list, err := s.snapshots.ListSnapshots(ctx, s.owner)
	if err != nil {
		return nil, err
	}
	if list == nil {
		list = []protocol.Snapshot{}
	}
	return &protocol.ListSnapshotsResult{Snapshots: list}, nil
}

func deleteSnapshot(ctx context.Context, s *session, _ *call, p *protocol.SnapshotNameParams) (*protocol.DeleteSnapshotResult, error) {
	if err := s.snapshotter(); err != nil {
		return nil, err
	}
	if err := checkSnapshotName("name", p.Name); err != nil {
		return nil, err
	}
	existed, err := s.snapshots.DeleteSnapshot(ctx, s.owner, p.Name)
	if err != nil {
		return nil, err
	}
	return &protocol.DeleteSnapshotResult{Existed: existed}, nil
}
