package serve

import (
	"context"
	"io"
	"sync"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/wire"
)

// files serves a running sandbox's files and the volume admin from the
// provider's optional interfaces.
func (s *Server) files(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	switch req.Method {
	case wire.MethodSandboxReadFile:
		f, ok := s.prov.(provider.SandboxFiles)
		if !ok {
			return nil, lacks("sandbox_files")
		}
		p, err := decode[wire.SandboxReadFileParams](req)
		if err != nil {
			return nil, err
		}
		rc, err := f.ReadSandboxFile(ctx, p.SandboxID, p.Path)
		if err != nil {
			return nil, err
		}
		return s.sendStream(ctx, conn, p.StreamID, rc)
	case wire.MethodSandboxListDir:
		f, ok := s.prov.(provider.SandboxFiles)
		if !ok {
			return nil, lacks("sandbox_files")
		}
		p, err := decode[wire.SandboxListDirParams](req)
		if err != nil {
			return nil, err
		}
		entries, truncated, err := f.ListSandboxDir(ctx, p.SandboxID, p.Path, p.Limit)
		if entries == nil {
			entries = []protocol.DirEntry{}
		}
		return wire.ListDirResult{Entries: entries, Truncated: truncated}, err
	case wire.MethodSandboxUpload:
		w, ok := s.prov.(provider.StreamWriter)
		if !ok {
			return nil, lacks("upload")
		}
		p, err := decode[wire.UploadParams](req)
		if err != nil {
			return nil, err
		}
		return s.upload(ctx, w, p)
	case wire.MethodUploadData:
		p, err := decode[wire.UploadData](req)
		if err != nil {
			return nil, err
		}
		return wire.Empty{}, s.uploadData(ctx, p)
	case wire.MethodCreateVolume, wire.MethodDeleteVolume:
		v, ok := s.prov.(provider.VolumeAdmin)
		if !ok {
			return nil, lacks("volume_admin")
		}
		p, err := decode[wire.VolumeParams](req)
		if err != nil {
			return nil, err
		}
		if req.Method == wire.MethodCreateVolume {
			return wire.Empty{}, v.CreateVolume(ctx, provider.Owner(p.Owner), p.Name)
		}
		return wire.Empty{}, v.DeleteVolume(ctx, provider.Owner(p.Owner), p.Name)
	}
	p, err := decode[wire.ExecResizeParams](req)
	if err != nil {
		return nil, err
	}
	e, err := s.startedExec(ctx, p.ExecID)
	if err != nil {
		return nil, err
	}
	r, ok := e.proc.(provider.Resizer)
	if !ok {
		return nil, protocol.Errorf(protocol.KindInvalidRequest, "exec %q has no terminal", p.ExecID)
	}
	return wire.Empty{}, r.Resize(protocol.WindowSize{Rows: p.Rows, Cols: p.Cols})
}

func lacks(capability string) error {
	return protocol.Errorf(protocol.KindInvalidRequest, "this provider has no %s", capability)
}

// upload feeds the provider's streaming writer from the upload/data that
// follow, each answered once the writer took it. Whichever of the upload
// and its first data arrives first makes the entry.
type upload struct {
	r  *io.PipeReader
	w  *io.PipeWriter
	mu sync.Mutex // one upload/data at a time, in order
}

func (s *Server) uploadEntry(id string) *upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.uploads[id]
	if u == nil {
		u = &upload{}
		u.r, u.w = io.Pipe()
		s.uploads[id] = u
	}
	return u
}

func (s *Server) upload(ctx context.Context, w provider.StreamWriter, p *wire.UploadParams) (any, error) {
	if p.UploadID == "" {
		return nil, protocol.Errorf(protocol.KindInvalidRequest, "upload_id is required")
	}
	u := s.uploadEntry(p.UploadID)
	defer func() {
		s.mu.Lock()
		delete(s.uploads, p.UploadID)
		s.mu.Unlock()
	}()
	// A cancelled upload fails the pipe, so the writer sees an error and
	// leaves nothing behind.
	stop := context.AfterFunc(ctx, func() { _ = u.r.CloseWithError(ctx.Err()) })
	defer stop()
	n, err := w.WriteFileFrom(ctx, p.SandboxID, p.Path, p.Mode, u.r)
	_ = u.r.CloseWithError(io.ErrClosedPipe) // an upload/data still waiting ends
	if err != nil {
		return nil, err
	}
	return wire.UploadResult{Bytes: n}, nil
}

var errUploadAborted = protocol.Errorf(protocol.KindCancelled, "upload aborted by the resident")

func (s *Server) uploadData(ctx context.Context, p *wire.UploadData) error {
	if p.UploadID == "" {
		return protocol.Errorf(protocol.KindInvalidRequest, "upload_id is required")
	}
	u := s.uploadEntry(p.UploadID)
	if p.Abort {
		_ = u.w.CloseWithError(errUploadAborted)
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { _ = u.w.CloseWithError(ctx.Err()) })
	defer stop()
	if len(p.Data) > 0 {
		if _, err := u.w.Write(p.Data); err != nil {
			return protocol.Errorf(protocol.KindConflict, "upload %q ended: %v", p.UploadID, err)
		}
	}
	if p.EOF {
		return u.w.Close()
	}
	return nil
}
