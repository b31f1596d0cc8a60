package resident

import (
	"context"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

func (s *session) needVolumeAdmin() (provider.VolumeAdmin, error) {
	if s.volumes == nil {
		return nil, invalid("provider %s cannot create or delete volumes (capabilities.volume_admin is false)", s.prov.Info().Name)
	}
	return s.volumes, nil
}

// createVolume makes an empty volume owned by this install.
func createVolume(ctx context.Context, s *session, _ *call, p *protocol.VolumeNameParams) (protocol.Empty, error) {
	admin, err := s.needVolumeAdmin()
	if err != nil {
		return protocol.Empty{}, err
	}
	if err := checkVolumeName(p.Name); err != nil {
		return protocol.Empty{}, err
	}
	return protocol.Empty{}, admin.CreateVolume(ctx, s.owner, p.Name)
}

// deleteVolume removes one of this install's volumes; one a running
// sandbox mounts is conflict, a missing or foreign one not_found.
func deleteVolume(ctx context.Context, s *session, _ *call, p *protocol.VolumeNameParams) (protocol.Empty, error) {
	admin, err := s.needVolumeAdmin()
	if err != nil {
		return protocol.Empty{}, err
	}
	if err := checkVolumeName(p.Name); err != nil {
		return protocol.Empty{}, err
	}
	return protocol.Empty{}, admin.DeleteVolume(ctx, s.owner, p.Name)
}
