package resident

import (
	"context"
	"errors"
	"io"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// upload is a streamed sandbox/write_file: registered on the read loop
// under its stream id (so upload/data pipelined right behind it finds it),
// fed by upload/data through a pipe the provider reads, and dropped when the
// write_file answers. The pipe is the backpressure: an upload/data answers
// once the provider has taken its bytes.
type upload struct {
	id string
	p  *uploadPipe
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
	c.upload = &upload{id: c.route.StreamID, p: newUploadPipe()}
	s.uploads[c.upload.id] = c.upload
}

// releaseUpload ends the upload a write_file registered, even one that
// failed before its handler ran, so an upload/data blocked on it returns.
func (s *session) releaseUpload(c *call) {
	u := c.upload
	if u == nil || (c.method != protocol.MethodSandboxWrite && c.method != protocol.MethodImageBuild) {
		return
	}
	u.p.CloseRead(errUploadEnded)
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
	stop := context.AfterFunc(ctx, func() { u.p.CloseRead(context.Cause(ctx)) })
	defer stop()
	var src io.Reader = u.p
	if p.Size != nil {
		src = &sizedUpload{r: u.p, size: *p.Size}
	}
	n, err := s.streamer.WriteFileFrom(ctx, p.SandboxID, p.Path, p.Mode, src)
	if err != nil {
		return nil, err
	}
	return &protocol.WriteFileResult{Bytes: n}, nil
}

// sizedUpload is an upload whose host announced its size: it is a
// provider.SizedUpload, which tells the provider (which may then take a faster path), and it fails the
// upload, whatever the provider's path, when the host sends more or ends
// it short, so nothing is written.
type sizedUpload struct {
	r       *uploadPipe
	size, n int64
}

func (u *sizedUpload) UploadSize() int64 { return u.size }

var (
	_ provider.SizedUpload = (*sizedUpload)(nil)
	_ provider.LentUpload  = (*sizedUpload)(nil)
	_ provider.LentUpload  = (*uploadPipe)(nil)
)

func (u *sizedUpload) Read(b []byte) (int, error) {
	n, err := u.r.Read(b)
	u.n += int64(n)
	switch {
	case u.n > u.size:
		return 0, protocol.Errorf(protocol.KindInvalidRequest, "upload: more bytes than the %d its size announced", u.size)
	case errors.Is(err, io.EOF) && u.n < u.size:
		return n, protocol.Errorf(protocol.KindInvalidRequest, "upload: it ended after %d of the %d bytes its size announced", u.n, u.size)
	}
	return n, err
}

// LendTo is the pipe's (the upload's bytes lent as they come) with the
// same checks as Read: a Write that would run over the size is refused
// whole, and an end before the size fails.
func (u *sizedUpload) LendTo(w io.Writer) (int64, error) {
	n, err := u.r.LendTo(&sizedWriter{w: w, u: u})
	switch {
	case err != nil:
		return n, err
	case u.n < u.size:
		return n, protocol.Errorf(protocol.KindInvalidRequest, "upload: it ended after %d of the %d bytes its size announced", u.n, u.size)
	}
	return n, nil
}

type sizedWriter struct {
	w io.Writer
	u *sizedUpload
}

func (s *sizedWriter) Write(b []byte) (int, error) {
	if s.u.n+int64(len(b)) > s.u.size {
		return 0, protocol.Errorf(protocol.KindInvalidRequest, "upload: more bytes than the %d its size announced", s.u.size)
	}
	n, err := s.w.Write(b)
	s.u.n += int64(n)
	return n, err
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
	stop := context.AfterFunc(ctx, func() { u.p.CloseWrite(context.Cause(ctx)) })
	defer stop()
	if len(p.Data) > 0 {
		if _, err := u.p.Write(p.Data); err != nil {
			return protocol.Empty{}, s.uploadEnded(ctx, p.StreamID, err)
		}
	}
	if p.EOF {
		u.p.CloseWrite(nil)
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
