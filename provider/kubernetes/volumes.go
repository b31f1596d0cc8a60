package kubernetes

import (
	"context"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// claimsFor resolves spec.volumes to the claims that back them.
func (p *Provider) claimsFor(ctx context.Context, owner provider.Owner, mounts []protocol.VolumeMount) (map[string]string, error) {
	if len(mounts) > 0 {
		return nil, protocol.Errorf(protocol.KindInvalidRequest, "spec.volumes: not yet on kubernetes")
	}
	return nil, nil
}
