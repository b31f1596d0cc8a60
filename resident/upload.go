package resident

import (
	"context"
	"errors"
	"io"

	"github.com/resident-dev/resident/protocol"
)

// upload is a streamed sandbox/write_file: registered on the read loop
// under its stream id (so upload/data pipelined right behind it finds it),
// fed by upload/data through a pipe the provider reads, and dropped when the
// write_file answers. The pipe is the backpressure: an upload/data answers
// once the provider has taken its bytes.
type upload struct {
	id string
	r  *io.PipeReader
	w  *io.PipeWriter
}

var errUploadEnded = errors.New("the upload's sandbox/write_file has answered")

// preRegisterUpload runs on the read loop with s.mu held.
func (s *session) preRegisterUpload(c *call) {
	if c.route.StreamID == "" {
		return
	}
	if _, dup := s.uploads[c.route.StreamID]; dup {
		return // writeFile sees it has no entry and refuses
	}
	r, w := io.Pipe()
	c.upload = &upload{id: c.route.StreamID, r: r, w: w}
	s.uploads[c.upload.id] = c.upload
}

// releaseUpload ends the upload a write_file registered, even one that
// failed before its handler ran, so an upload/data blocked on it returns.
func (s *session) releaseUpload(c *call) {
	u := c.upload
	if u == nil || c.method != protocol.MethodSandboxWrite {
		return
	}
	_ = u.r.CloseWithError(errUploadEnded)
	s.mu.Lock()
	if s.uploads[u.id] == u {
		delete(s.uploads, u.id)
	}
	s.mu.Unlock()
}

// writeStreamed serves a sandbox/write_file with stream_id.
func (s *session) writeStreamed(ctx context.Context, c *call, p *protocol.WriteFileParams) (*protocol.WriteFileResult, error) {
	if s.streamer == nil {
		return nil, invalid("provider %s cannot take streamed uploads (capabilities.upload is false)", s.prov.Info().Name)
	}
	if p.Data != nil {
		return nil, invalid("give data or stream_id, not both")
	}
	if err := checkID("stream_id", p.StreamID); err != nil {
		return nil, err
	}
	u := c.upload
	if u == nil || u.id != p.StreamID {
		return nil, protocol.Errorf(protocol.KindConflict, "stream_id %q is in use by an upload that has not answered yet", p.StreamID)
	}
	if err := s.checkOwned(ctx, p.SandboxID); err != nil {
		return nil, err
	}
	// A cancelled write_file ($/cancelRequest, the session ending) fails
	// the provider's read of the stream, which a provider blocked waiting
	// for the next upload/data would otherwise never see.
	stop := context.AfterFunc(ctx, func() { _ = u.r.CloseWithError(context.Cause(ctx)) })
	defer stop()
	n, err := s.streamer.WriteFileFrom(ctx, p.SandboxID, p.Path, p.Mode, u.r)
	if err != nil {
		return nil, err
	}
	return &protocol.WriteFileResult{Bytes: n}, nil
}

// uploadData hands the next bytes of a streamed write_file to the provider.
// Requests for one stream run in arrival order (their ordering key). A
// cancelled upload/data fails the whole upload: bytes half taken cannot be
// taken back.
func uploadData(ctx context.Context, s *session, c *call, p *protocol.UploadDataParams) (protocol.Empty, error) {
	if err := checkID("stream_id", p.StreamID); err != nil {
		return protocol.Empty{}, err
	}
	u := c.upload
	if u == nil || u.id != p.StreamID {
		return protocol.Empty{}, protocol.Errorf(protocol.KindNotFound, "no upload %q is open in this session", p.StreamID)
	}
	stop := context.AfterFunc(ctx, func() { _ = u.w.CloseWithError(context.Cause(ctx)) })
	defer stop()
	if len(p.Data) > 0 {
		if _, err := u.w.Write(p.Data); err != nil {
			return protocol.Empty{}, s.uploadEnded(ctx, p.StreamID, err)
		}
	}
	if p.EOF {
		_ = u.w.Close()
	}
	return protocol.Empty{}, nil
}

func (s *session) uploadEnded(ctx context.Context, id string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, errUploadEnded) {
		return protocol.Errorf(protocol.KindConflict, "upload %q has ended: its sandbox/write_file answered", id)
	}
	return protocol.Errorf(protocol.KindConflict, "upload %q has ended: %v", id, err)
}

// keptByUpload: the data waits until the provider takes it.
func keptByUpload(params any) (int64, bool) {
	return int64(len(params.(*protocol.UploadDataParams).Data)), true
}

// byUpload orders a stream's upload/data; byWrite orders a plain
// write_file behind the sandbox's other mutations, but not a streamed one,
// which could hold the sandbox's queue (terminate too) for as long as the
// host takes to send it.
func byUpload(r route) string { return "upload:" + r.StreamID }
func byWrite(r route) string {
	if r.StreamID != "" {
		return ""
	}
	return bySandbox(r)
}
