package client

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/resident-dev/resident/protocol"
)

// ReadSandboxFile streams a file out of a running sandbox into w
// (sandbox/read_file) and checks what arrived, as ReadFile does for a
// volume. Needs capabilities.sandbox_files.
func (c *Client) ReadSandboxFile(ctx context.Context, sandboxID, path string, w io.Writer) (*protocol.ReadFileResult, error) {
	return c.readStream(ctx, protocol.MethodSandboxReadFile, path, w, func(streamID string) any {
		return protocol.SandboxReadFileParams{SandboxID: sandboxID, Path: path, StreamID: streamID}
	})
}

// ListSandboxDir lists a directory of a running sandbox (sandbox/list_dir).
// Needs capabilities.sandbox_files.
func (c *Client) ListSandboxDir(ctx context.Context, p protocol.SandboxListDirParams) (*protocol.ListDirResult, error) {
	var res protocol.ListDirResult
	if err := c.call(ctx, protocol.MethodSandboxListDir, p, &res); err != nil {
		return nil, err
	}
	if res.Entries == nil {
		res.Entries = []protocol.DirEntry{}
	}
	return &res, nil
}

// UploadChunkBytes is the size of one upload/data; uploadWindow of them
// are in flight at once, so the resident always has the next chunk while
// the provider writes one.
const (
	UploadChunkBytes = 256 << 10
	uploadWindow     = 4
)

// Upload streams r into a file of a running sandbox (sandbox/write_file
// with stream_id, fed by upload/data), of any size; the file appears whole
// or not at all. progress, when set, is called with the bytes the resident
// has taken so far. Needs capabilities.upload.
func (c *Client) Upload(ctx context.Context, sandboxID, path string, mode *uint32, r io.Reader, progress func(int64)) (int64, error) {
	return c.UploadSized(ctx, sandboxID, path, mode, r, -1, progress)
}

// UploadSized is Upload of a file whose size is known (size >= 0; -1 for
// unknown): it sends exactly size bytes of r (as docker cp does, a file
// that grew is cut at the size it had) and fails if r ends sooner. The
// resident may then carry it on a faster path (Docker: the engine's
// archive endpoint).
func (c *Client) UploadSized(ctx context.Context, sandboxID, path string, mode *uint32, r io.Reader, size int64, progress func(int64)) (int64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	streamID := c.newID("upload")
	params := protocol.WriteFileParams{SandboxID: sandboxID, Path: path, Mode: mode, StreamID: streamID}
	if size >= 0 {
		params.Size = &size
		r = io.LimitReader(r, size)
	}
	write, err := c.start(ctx, protocol.MethodSandboxWrite, params)
	if err != nil {
		return 0, err
	}
	sendErr := c.sendUpload(ctx, streamID, r, progress)
	if sendErr != nil {
		cancel(sendErr) // the write_file is cancelled: nothing is left behind
	}
	var res protocol.WriteFileResult
	err = c.await(ctx, write, &res)
	switch {
	case sendErr != nil && err != nil && !errors.Is(sendErr, errUploadEnded):
		return 0, fmt.Errorf("%s %s: %w", protocol.MethodUploadData, path, sendErr)
	case err != nil:
		return 0, err
	}
	return res.Bytes, nil
}

var errUploadEnded = errors.New("the upload ended")

// sendUpload sends r as upload/data, at most uploadWindow unanswered.
func (c *Client) sendUpload(ctx context.Context, streamID string, r io.Reader, progress func(int64)) error {
	var inFlight []*pendingCall
	var sizes []int
	var taken int64
	wait := func() error {
		pc := inFlight[0]
		inFlight, sizes = inFlight[1:], sizes[1:]
		if err := c.await(ctx, pc, nil); err != nil {
			return fmt.Errorf("%w: %w", errUploadEnded, err)
		}
		return nil
	}
	// One buffer for every chunk: a request's bytes are encoded into its
	// frame before start returns.
	buf := make([]byte, UploadChunkBytes)
	for eof := false; !eof; {
		n, rerr := io.ReadFull(r, buf)
		switch {
		case errors.Is(rerr, io.EOF), errors.Is(rerr, io.ErrUnexpectedEOF):
			eof = true
		case rerr != nil:
			return rerr
		}
		pc, err := c.start(ctx, protocol.MethodUploadData, protocol.UploadDataParams{StreamID: streamID, Data: buf[:n], EOF: eof})
		if err != nil {
			return err
		}
		inFlight, sizes = append(inFlight, pc), append(sizes, n)
		for len(inFlight) >= uploadWindow || (eof && len(inFlight) > 0) {
			n := sizes[0]
			if err := wait(); err != nil {
				return err
			}
			taken += int64(n)
			if progress != nil {
				progress(taken)
			}
		}
	}
	return nil
}

// CreateVolume makes an empty volume owned by this install
// (store/create_volume). Needs capabilities.volume_admin.
func (c *Client) CreateVolume(ctx context.Context, name string) error {
	return c.call(ctx, protocol.MethodCreateVolume, protocol.VolumeNameParams{Name: name}, nil)
}

// DeleteVolume removes one of this install's volumes (store/delete_volume).
// Needs capabilities.volume_admin.
func (c *Client) DeleteVolume(ctx context.Context, name string) error {
	return c.call(ctx, protocol.MethodDeleteVolume, protocol.VolumeNameParams{Name: name}, nil)
}
