package resident

import (
	"context"
	"path"
	"strings"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
)

// buildImage serves image/build: its context arrives as an upload (issue
// 14's shape: registered on the read loop under context_stream_id, fed by
// upload/data, backpressured by the pipe) and goes to the provider's
// builder as it comes. The builder's lines go out as image/build_progress,
// scrubbed as every notification is.
func buildImage(ctx context.Context, s *session, c *call, p *protocol.ImageBuildParams) (*protocol.ImageBuildResult, error) {
	if s.builder == nil {
		return nil, invalid("provider %s cannot build images (capabilities.image_build is false)", s.prov.Info().Name)
	}
	if err := checkID("context_stream_id", p.ContextStreamID); err != nil {
		return nil, err
	}
	if err := checkSnapshotName("tag", p.Tag); err != nil {
		return nil, err
	}
	dockerfile := p.Dockerfile
	if dockerfile == "" {
		dockerfile = "Dockerfile"
	}
	if err := checkPath("dockerfile", dockerfile); err != nil {
		return nil, err
	}
	if path.IsAbs(dockerfile) || strings.HasPrefix(path.Clean(dockerfile), "..") {
		return nil, invalid("dockerfile must be a path inside the context")
	}
	u := c.upload
	if u == nil || u.id != p.ContextStreamID {
		return nil, protocol.Errorf(protocol.KindConflict, "stream_id %q is in use by an upload that has not answered yet", p.ContextStreamID)
	}
	res, err := s.builder.BuildImage(ctx, s.owner, buildRequest(s, u, path.Clean(dockerfile), p.Tag))
	if err != nil {
		return nil, err
	}
	s.log.Info("image built", zap.String("tag", p.Tag), zap.Bool("cached", res.Cached))
	return &res, nil
}

// checkBuildImage refuses spec.image "build:TAG" where it cannot be
// honoured, before anything is made.
func (s *session) checkBuildImage(image string) error {
	tag, ok := strings.CutPrefix(image, protocol.BuildPrefix)
	if !ok {
		return nil
	}
	if s.builder == nil {
		return invalid("spec.image %q: provider %s cannot build images (capabilities.image_build is false)", image, s.prov.Info().Name)
	}
	return checkSnapshotName("spec.image's build tag", tag)
}
