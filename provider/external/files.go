package external

import (
	"context"
	"errors"
	"io"
	"strconv"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/wire"
)

// uploadChunk is the most one upload/data carries: small enough to keep
// frames well under max_frame_bytes once base64-encoded.
const uploadChunk = 1 << 20

func (p *Provider) ReadSandboxFile(ctx context.Context, sandboxID, path string) (io.ReadCloser, error) {
	return p.readStream(ctx, wire.MethodSandboxReadFile, func(id string) any {
		return wire.SandboxReadFileParams{SandboxID: sandboxID, Path: path, StreamID: id}
	})
}

func (p *Provider) ListSandboxDir(ctx context.Context, sandboxID, path string, limit int) ([]protocol.DirEntry, bool, error) {
	var res wire.ListDirResult
	if err := p.call(ctx, wire.MethodSandboxListDir, wire.SandboxListDirParams{SandboxID: sandboxID, Path: path, Limit: limit}, &res); err != nil {
		return nil, false, err
	}
	return res.Entries, res.Truncated, nil
}

// WriteFileFrom streams r as upload/data requests, each answered once the
// provider took it (backpressure), under one sandbox/upload that answers
// when the file is in place. When r fails or ctx ends, an abort tells the
// provider to remove what it wrote, and the call returns once it has (or
// once the provider's deadline passed): nothing is left behind.
func (p *Provider) WriteFileFrom(ctx context.Context, sandboxID, path string, mode *uint32, r io.Reader) (int64, error) {
	c, err := p.current(ctx)
	if err != nil {
		return 0, err
	}
	id := "u" + strconv.FormatUint(p.seq.Add(1), 10)
	// The upload request ends with the provider's answer, not with ctx:
	// an abort must be answered after the clean-up it asks for.
	uctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	var res wire.UploadResult
	answered := make(chan error, 1)
	go func() {
		answered <- p.streamCallResult(uctx, c, wire.MethodSandboxUpload, wire.UploadParams{SandboxID: sandboxID, Path: path, Mode: mode, UploadID: id}, &res)
	}()
	abort := func(cause error) (int64, error) {
		actx, stop := context.WithTimeout(context.Background(), p.callTimeout)
		defer stop()
		_ = p.callOn(actx, c, wire.MethodUploadData, wire.UploadData{UploadID: id, Abort: true}, nil)
		select {
		case <-answered:
		case <-actx.Done():
		}
		return 0, cause
	}
	buf := make([]byte, uploadChunk)
	for {
		if err := ctx.Err(); err != nil {
			return abort(err)
		}
		n, rerr := io.ReadFull(r, buf)
		eof := errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF)
		if rerr != nil && !eof {
			return abort(rerr)
		}
		if err := p.callOn(ctx, c, wire.MethodUploadData, wire.UploadData{UploadID: id, Data: buf[:n], EOF: eof}, nil); err != nil {
			// A provider that refused the file (a directory, no permission)
			// ended the upload: its answer has the reason.
			wait, stop := context.WithTimeout(ctx, p.callTimeout)
			select {
			case aerr := <-answered:
				stop()
				if aerr != nil {
					return 0, aerr
				}
				return 0, err
			case <-wait.Done():
				stop()
			}
			if ctx.Err() != nil {
				return abort(ctx.Err())
			}
			return abort(err)
		}
		if eof {
			break
		}
	}
	select {
	case err := <-answered:
		if err != nil {
			return 0, err
		}
		return res.Bytes, nil
	case <-ctx.Done():
		return abort(ctx.Err())
	}
}

func (p *Provider) CreateVolume(ctx context.Context, owner provider.Owner, name string) error {
	return p.call(ctx, wire.MethodCreateVolume, wire.VolumeParams{Owner: wire.Owner(owner), Name: name}, nil)
}

func (p *Provider) DeleteVolume(ctx context.Context, owner provider.Owner, name string) error {
	return p.call(ctx, wire.MethodDeleteVolume, wire.VolumeParams{Owner: wire.Owner(owner), Name: name}, nil)
}

// Resize changes the terminal of an exec started with a tty.
func (e *process) Resize(size protocol.WindowSize) error {
	ctx, cancel := context.WithTimeout(context.Background(), e.p.callTimeout)
	defer cancel()
	return e.p.callOn(ctx, e.child, wire.MethodExecResize, wire.ExecResizeParams{ExecID: e.id, Rows: size.Rows, Cols: size.Cols}, nil)
}
