package provider

import (
	"context"
	"io"

	"github.com/resident-dev/resident/protocol"
)

// ImageBuilder is the optional ability to build images from a context the
// host streams (capabilities.image_build). Built images are owner-scoped
// like snapshots: Create takes spec.image protocol.BuildPrefix+TAG as
// owner's image TAG, and another install's, or none, is not_found.
type ImageBuilder interface {
	// BuildImage reads the context (a tar) to EOF and builds it. A build of
	// the same context and Dockerfile as one of owner's earlier builds
	// reuses that image (Cached) and only names it tag. Progress receives
	// each line of the builder's output, with its step when known. A step
	// that fails is invalid_request naming the step.
	BuildImage(ctx context.Context, owner Owner, req BuildRequest) (protocol.ImageBuildResult, error)
}

// BuildRequest is a validated image/build.
type BuildRequest struct {
	Context    io.Reader
	Dockerfile string
	Tag        string
	Progress   func(step, line string)
}
