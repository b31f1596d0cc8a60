package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"path"
	"time"

	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/keeperexec"
)

// Big files of a channel-mode sandbox travel on the engine's archive
// endpoint (GET and PUT /containers/{id}/archive), the engine's own bulk
// path, at two to three times what any exec or attach stream carries on
// the same engine (docs/performance.md), and as available on a remote
// engine as the attach stream is. The endpoint reads and writes as the
// engine's root, so the keeper does everything that must be the user's:
//
//   - a read starts on the channel, where the keeper opens and checks it
//     as the user and says what it opened; for a big file the archive then
//     reads the path the opened descriptor names, and its tar header must
//     show the file the keeper opened (a regular file of that size, mode,
//     owner and second): then the channel's read is closed, else it goes
//     on as if the archive had not been asked;
//   - a write is checked as the user and staged in a directory the keeper
//     makes as the user beside the target (StageFile: WriteFile's checks and
//     errors); the archive puts the file there with the user's uid and gid,
//     and the keeper checks it and renames it into place as the user, so a
//     reader never sees half a file and a failure leaves nothing.
//
// Only where the archive sees what the sandbox sees: files on the
// sandbox's root filesystem (not a tmpfs, which the endpoint does not see,
// nor a volume or bind mount), of at least archiveMinBytes; writes only
// of a known size (tar needs it first) and only as uid 0 (below). Anything
// else takes the channel, as does every file under OptFiles "channel".

// OptFiles is --provider-opt files=...: "archive" (the default) carries big
// files of channel-mode sandboxes on the engine's archive endpoint,
// "channel" keeps every byte on the keeper channel.
var OptFiles = provider.Option[string]{Name: "files", Default: filesArchive,
	Doc: `how big files of a sandbox travel: "archive" (the engine's archive endpoint, checked and committed by the keeper as the sandbox's user) or "channel" (the keeper channel only)`}

const (
	filesArchive = "archive"
	filesChannel = "channel"
)

// archiveMinBytes is the smallest file worth the archive: below it the
// extra round trips cost more than the faster bytes save.
const archiveMinBytes = 1 << 20

// readOverArchive takes over a read the keeper opened and checked as the
// user on the channel (rc), when the file is worth it and the archive
// endpoint gives exactly that file: rc is then closed (the keeper stops)
// and the archive's reader returned. Otherwise rc itself, untouched.
func (p *Provider) readOverArchive(ctx context.Context, sandboxID string, rc io.ReadCloser) io.ReadCloser {
	opened, ok := rc.(interface {
		Info() (channel.FileInfo, bool)
	})
	if p.files != filesArchive || !ok {
		return rc
	}
	info, ok := opened.Info()
	if !ok || !info.OnRoot || info.Path == "" || info.Size < archiveMinBytes {
		return rc
	}
	// The whole body is the caller's to read, at its pace; only the answer
	// and the tar header are bounded by the call bound.
	rctx, cancel := context.WithCancel(ctx)
	late := time.AfterFunc(p.timing.api, cancel)
	res, err := p.cli.CopyFromContainer(rctx, sandboxID, client.CopyFromContainerOptions{SourcePath: info.Path})
	if err != nil {
		late.Stop()
		cancel()
		p.log.Debug("archive read: staying on the channel", zap.String("sandbox", sandboxID), zap.Error(err))
		return rc
	}
	tr := tar.NewReader(res.Content)
	h, err := tr.Next()
	if !late.Stop() || err != nil || !sameFile(h, info) {
		res.Content.Close()
		cancel()
		p.log.Debug("archive read: not the file the keeper opened; staying on the channel", zap.String("sandbox", sandboxID), zap.Error(err))
		return rc
	}
	rc.Close()
	p.archiveReads.Add(1)
	return &archiveFile{r: tr, body: res.Content, cancel: cancel, size: info.Size}
}

// sameFile: the archive's entry is the file the keeper opened as the user,
// as far as a tar header tells (the endpoint's times are whole seconds).
func sameFile(h *tar.Header, info channel.FileInfo) bool {
	return h.Typeflag == tar.TypeReg && h.Size == info.Size && uint32(h.Mode)&0o777 == info.Mode&0o777 &&
		h.Uid == info.UID && h.Gid == info.GID && h.ModTime.Unix() == time.Unix(0, info.MtimeNS).Unix()
}

// archiveFile is the one file of an archive read.
type archiveFile struct {
	r      io.Reader
	body   io.Closer
	cancel context.CancelFunc
	size   int64
}

func (f *archiveFile) Read(b []byte) (int, error) { return f.r.Read(b) }
func (f *archiveFile) Size() int64                { return f.size }

func (f *archiveFile) Close() error {
	err := f.body.Close()
	f.cancel()
	return err
}

// writeOverArchive writes a file of a known size through the archive
// endpoint into a staging directory the keeper made as user, then has the
// keeper rename it into place. ok false: take the channel (nothing of src
// was read).
//
// Only as uid 0: the engine resolves the staging directory's path as its
// root, and a sandbox process that may rename entries of the target's
// directory could swap the directory for a symlink under the upload; as
// uid 0 (without capabilities) it could already write almost anywhere
// itself, a user could not. The stray file such a swap leaves is named
// as the staging directory, hidden and random.
func (p *Provider) writeOverArchive(ctx context.Context, sandboxID string, conn *channel.Conn, abs, user, filePath string, mode *uint32, src io.Reader) (int64, bool, error) {
	sz, ok := src.(provider.SizedUpload)
	if p.files != filesArchive || !ok || sz.UploadSize() < archiveMinBytes || abs == "/" || !conn.Supports(keeperproto.FeatureFileStage) {
		return 0, false, nil
	}
	size := sz.UploadSize()
	if mode != nil {
		perm := *mode & 0o777 // only the permission bits, as on the channel
		mode = &perm
	}
	stage, err := conn.StageFile(ctx, abs, mode, user)
	if err != nil {
		if ctx.Err() != nil {
			return 0, true, ctx.Err()
		}
		return 0, true, keeperexec.FileError("write_file", filePath, err)
	}
	if !stage.OnRoot || stage.UID != 0 {
		stage.Abort()
		return 0, false, nil
	}
	p.archiveWrites.Add(1)
	if err := p.putStaged(ctx, sandboxID, stage, src, size); err != nil {
		stage.Abort()
		if ctx.Err() != nil {
			return 0, true, ctx.Err()
		}
		return 0, true, err
	}
	if ctx.Err() != nil {
		stage.Abort() // cancelled once the bytes were in: nothing is renamed
		return 0, true, ctx.Err()
	}
	if err := stage.Commit(size); err != nil {
		return 0, true, keeperexec.FileError("write_file", filePath, err)
	}
	return size, true, nil
}

// putStaged streams src as a tar of the one staged file into the staging
// directory. However it ends, it returns only once the engine has
// answered, so an abort after it removes all the engine wrote: a source
// that fails, or falls short or runs over its size, ends the request body
// cleanly with the tar cut short, which the engine answers with an error
// once it has stopped writing (cutting the connection would leave it
// writing after the abort). Only an engine that does not answer within the
// call bound after ctx ended has its request cancelled.
func (p *Provider) putStaged(ctx context.Context, sandboxID string, stage *channel.Stage, src io.Reader, size int64) error {
	body, err := newStagedTar(stage, src, size)
	if err != nil {
		return err
	}
	pctx, pcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer pcancel()
	answered := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		select {
		case <-answered:
		case <-time.After(p.timing.api):
			pcancel()
		}
	})
	defer stop()
	perr := p.putArchive(pctx, sandboxID, stage.Path, body)
	close(answered)
	if body.err != nil {
		return body.err
	}
	return perr
}

// stagedTar is the request body of a staged write: a tar of the one file,
// read straight from src (no pipe, no copy of its own; WriteTo hands the
// HTTP transport whole chunks as the upload gives them). A src that fails,
// ends short or runs over ends the body early with err set.
type stagedTar struct {
	head  []byte // the header, not yet sent
	src   io.Reader
	left  int64 // file bytes still to come from src
	size  int64
	ended bool   // src checked to be at its end
	tail  []byte // padding and the end-of-archive blocks
	err   error
}

func newStagedTar(stage *channel.Stage, src io.Reader, size int64) (*stagedTar, error) {
	var head bytes.Buffer
	err := tar.NewWriter(&head).WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path.Base(stage.StagedPath()), Size: size,
		Mode: int64(stage.Mode & 0o777), Uid: stage.UID, Gid: stage.GID, ModTime: time.Now()})
	if err != nil {
		return nil, err
	}
	pad := (512 - size%512) % 512
	return &stagedTar{head: head.Bytes(), src: src, left: size, size: size, tail: make([]byte, pad+1024)}, nil
}

func (t *stagedTar) Read(b []byte) (int, error) {
	switch {
	case t.err != nil:
		return 0, io.EOF
	case len(t.head) > 0:
		n := copy(b, t.head)
		t.head = t.head[n:]
		return n, nil
	case t.left > 0:
		n, err := t.src.Read(b[:min(int64(len(b)), t.left)])
		t.left -= int64(n)
		switch {
		case errors.Is(err, io.EOF) && t.left > 0:
			t.err = protocol.Errorf(protocol.KindInvalidRequest, "write_file: the upload ended after %d of the %d bytes its size announced", t.size-t.left, t.size)
		case err != nil && !errors.Is(err, io.EOF):
			t.err = err
		}
		if t.err != nil {
			return 0, io.EOF // cut short: the engine refuses the tar
		}
		return n, nil
	case !t.ended:
		var one [1]byte
		n, err := t.src.Read(one[:])
		switch {
		case n > 0:
			t.err = protocol.Errorf(protocol.KindInvalidRequest, "write_file: the upload is longer than the %d bytes its size announced", t.size)
		case errors.Is(err, io.EOF):
			t.ended = true
		case err != nil:
			t.err = err
		}
		if t.err != nil {
			return 0, io.EOF
		}
		return 0, nil
	case len(t.tail) > 0:
		n := copy(b, t.tail)
		t.tail = t.tail[n:]
		return n, nil
	}
	return 0, io.EOF
}

// WriteTo is what the HTTP transport copies the body with: in chunks of
// the upload's own size, a write to the engine's socket each. A src that
// lends its buffers (the resident's upload) has them written as they are,
// without a copy into a buffer of ours: w is the transport's chunked
// writer over a bufio.Writer and the connection, which keep nothing.
func (t *stagedTar) WriteTo(w io.Writer) (int64, error) {
	if lent, ok := t.src.(provider.LentUpload); ok && t.err == nil && !t.ended {
		return t.lendTo(w, lent)
	}
	buf := make([]byte, 256<<10)
	var total int64
	for {
		n, err := t.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
	}
}

// lendTo is WriteTo for a src that lends its buffers: the header, the
// file's bytes straight from src, then the padding and the end of the
// archive. A src that fails, ends short or runs over ends the body early
// with t.err set, as Read does; an error of w (the engine's connection)
// is returned.
func (t *stagedTar) lendTo(w io.Writer, src provider.LentUpload) (int64, error) {
	body := &stagedBody{w: w, left: t.left}
	if _, err := body.put(t.head); err != nil {
		return body.n, err
	}
	t.head = nil
	_, err := src.LendTo(body)
	t.left = body.left
	switch {
	case body.werr != nil:
		return body.n, body.werr
	case body.over:
		t.err = protocol.Errorf(protocol.KindInvalidRequest, "write_file: the upload is longer than the %d bytes its size announced", t.size)
	case err != nil:
		t.err = err
	case t.left > 0:
		t.err = protocol.Errorf(protocol.KindInvalidRequest, "write_file: the upload ended after %d of the %d bytes its size announced", t.size-t.left, t.size)
	}
	if t.err != nil {
		return body.n, nil // cut short: the engine refuses the tar
	}
	t.ended = true
	_, err = body.put(t.tail)
	t.tail = nil
	return body.n, err
}

// stagedBody is the writer a lent upload writes the file's bytes to: it
// refuses (whole) a write past the size, and keeps the connection's
// error apart from the source's.
type stagedBody struct {
	w    io.Writer
	n    int64 // written to w
	left int64 // file bytes still to come
	over bool
	werr error
}

func (b *stagedBody) Write(p []byte) (int, error) {
	if int64(len(p)) > b.left {
		b.over = true
		return 0, errUploadOver
	}
	n, err := b.put(p)
	b.left -= int64(n)
	return n, err
}

func (b *stagedBody) put(p []byte) (int, error) {
	if b.werr != nil {
		return 0, b.werr
	}
	n, err := b.w.Write(p)
	b.n += int64(n)
	if err != nil {
		b.werr = err
	}
	return n, err
}

var errUploadOver = errors.New("the upload is longer than its size")
