package client

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/resident-dev/resident/protocol"
)

// Snapshot records a sandbox's filesystem as this install's snapshot name
// (sandbox/snapshot); spec.image "snapshot:NAME" then forks from it. Needs
// capabilities.snapshot.
func (c *Client) Snapshot(ctx context.Context, sandboxID, name string) (*protocol.Snapshot, error) {
	var res protocol.Snapshot
	if err := c.call(ctx, protocol.MethodSandboxSnapshot, protocol.SnapshotParams{SandboxID: sandboxID, Name: name}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// ListSnapshots lists this install's snapshots, oldest first.
func (c *Client) ListSnapshots(ctx context.Context) ([]protocol.Snapshot, error) {
	var res protocol.ListSnapshotsResult
	if err := c.call(ctx, protocol.MethodSnapshotList, nil, &res); err != nil {
		return nil, err
	}
	return res.Snapshots, nil
}

// DeleteSnapshot removes one of this install's snapshots; idempotent.
func (c *Client) DeleteSnapshot(ctx context.Context, name string) (existed bool, err error) {
	var res protocol.DeleteSnapshotResult
	err = c.call(ctx, protocol.MethodSnapshotDelete, protocol.SnapshotNameParams{Name: name}, &res)
	return res.Existed, err
}

// BuildImage builds the tar context read from r (image/build, the context
// streamed as upload/data) and names the result "build:TAG". Progress
// lines go to Options.OnBuildProgress. Needs capabilities.image_build.
func (c *Client) BuildImage(ctx context.Context, dockerfile, tag string, r io.Reader) (*protocol.ImageBuildResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	streamID := c.newID("build")
	build, err := c.start(ctx, protocol.MethodImageBuild, protocol.ImageBuildParams{ContextStreamID: streamID, Dockerfile: dockerfile, Tag: tag})
	if err != nil {
		return nil, err
	}
	sendErr := c.sendUpload(ctx, streamID, r, nil)
	if sendErr != nil && !errors.Is(sendErr, errUploadEnded) {
		cancel(sendErr) // a context that cannot be read is no build
	}
	var res protocol.ImageBuildResult
	err = c.await(ctx, build, &res)
	switch {
	case sendErr != nil && err != nil && !errors.Is(sendErr, errUploadEnded):
		return nil, fmt.Errorf("%s %s: %w", protocol.MethodUploadData, tag, sendErr)
	case err != nil:
		return nil, err
	}
	return &res, nil
}
