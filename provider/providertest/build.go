package providertest

import (
	"archive/tar"
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// buildContext is a tar of files (path -> content), in path order: the
// same files make the same bytes, as a host's tar of one directory does.
func buildContext(t *testing.T, files map[string]string) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		content := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(content))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &b
}

// runBuild checks a provider.ImageBuilder (capabilities.image_build) with
// a context whose FROM is the harness's own image (no registry): a build
// reports its steps and is usable as "build:TAG"; the same context again
// is a cache hit; a failing step is invalid_request naming it; another
// install can neither use the image nor hit its cache.
func runBuild(t *testing.T, h Harness) {
	e := newEnv(t, h)
	builder, ok := e.p.(provider.ImageBuilder)
	if !ok || !e.p.Info().Capabilities.ImageBuild {
		t.Skip("the provider does not announce capabilities.image_build")
	}
	files := map[string]string{
		"Dockerfile": "FROM " + h.Image + "\nCOPY greeting /greeting\nRUN echo built > /built\n",
		"greeting":   uniqueName("hello") + "\n",
	}
	var steps []string
	build := func(owner provider.Owner, files map[string]string, tag string) (protocol.ImageBuildResult, error) {
		steps = nil
		return builder.BuildImage(ctx(t), owner, provider.BuildRequest{
			Context: buildContext(t, files), Dockerfile: "Dockerfile", Tag: tag,
			Progress: func(step, line string) { steps = append(steps, step+"|"+line) },
		})
	}
	res, err := build(e.owner, files, "first")
	if err != nil {
		t.Fatalf("BuildImage: %v", err)
	}
	if res.Cached || res.ImageID == "" || res.Image != "build:first" {
		t.Fatalf("first build = %+v", res)
	}
	if joined := strings.Join(steps, "\n"); !strings.Contains(joined, "|Step 3/") || !strings.Contains(joined, "RUN echo built") {
		t.Fatalf("progress did not name the steps (%d lines):\n%s", len(steps), joined)
	}
	id := e.create(protocol.Spec{Image: res.Image}, nil)
	if out := e.sh(id, "/", "cat /greeting /built"); out != files["greeting"]+"built\n" {
		t.Fatalf("a sandbox of the built image sees %q", out)
	}

	again, err := build(e.owner, files, "second")
	if err != nil || !again.Cached || again.ImageID != res.ImageID {
		t.Fatalf("the same context again = %+v, %v (want a cache hit of %s)", again, err, res.ImageID)
	}
	e.create(protocol.Spec{Image: "build:second"}, nil)

	failing := map[string]string{"Dockerfile": "FROM " + h.Image + "\nRUN echo step two\nRUN exit 3\n"}
	_, err = build(e.owner, failing, "broken")
	wantKind(t, "a failing step", err, protocol.KindInvalidRequest)
	// The builder counts the labels it adds as steps too: the step's
	// number is the Dockerfile's, its total may be larger.
	if !strings.Contains(err.Error(), "step 3/") || !strings.Contains(err.Error(), "(RUN exit 3)") {
		t.Fatalf("the error does not name the failing step: %v", err)
	}

	other := provider.Owner{Key: OwnerKey, InstallID: uniqueName("other")}
	_, err = e.p.Create(ctx(t), protocol.Spec{Image: res.Image}, other, nil)
	wantKind(t, "another install's create from the built image", err, protocol.KindNotFound)
	theirs, err := build(other, files, "first")
	if err != nil || theirs.Cached {
		t.Fatalf("another install's build of the same context = %+v, %v (it must not see our cache)", theirs, err)
	}
}
