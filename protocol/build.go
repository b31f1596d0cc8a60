package protocol

// BuildPrefix marks a spec.image that names an image this install built
// with image/build: "build:TAG".
const BuildPrefix = "build:"

// ImageBuildParams build an image from a context the host streams as a tar
// through upload/data under ContextStreamID (§4.33). Dockerfile is the path
// of the Dockerfile inside the context ("" = "Dockerfile"); Tag names the
// result for spec.image "build:TAG".
type ImageBuildParams struct {
	ContextStreamID string `json:"context_stream_id"`
	Dockerfile      string `json:"dockerfile,omitempty"`
	Tag             string `json:"tag"`
}

// ImageBuildResult names the built image. Cached is true when an image of
// this install built from the same context and Dockerfile was reused.
type ImageBuildResult struct {
	ImageID string `json:"image_id"`
	Image   string `json:"image"`
	Cached  bool   `json:"cached"`
}

// BuildProgress is one line of a build's output (scrubbed), sent while
// image/build runs. Step is the build step the line belongs to, as the
// builder names it ("2/3"), when it does.
type BuildProgress struct {
	Tag  string `json:"tag"`
	Step string `json:"step,omitempty"`
	Line string `json:"line"`
}
