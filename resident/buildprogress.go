package resident

import (
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

func buildRequest(s *session, u *upload, dockerfile, tag string) provider.BuildRequest {
	return provider.BuildRequest{
		Context: u.p, Dockerfile: dockerfile, Tag: tag,
		Progress: func(step, line string) {
			s.notifyText(protocol.NotifyBuildProgress, protocol.BuildProgress{Tag: tag, Step: step, Line: line})
		},
	}
}
