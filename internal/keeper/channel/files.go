package channel

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// WriteFile writes r's bytes to path as user, atomically: a temporary file
// beside it, renamed into place once all of r is in; a failed or cancelled
// write leaves nothing. Missing parents are made 0755. mode nil: a new file
// is 0644, an existing one keeps its mode. A *FileError says why not. path
// is absolute in the sandbox.
func (c *Conn) WriteFile(ctx context.Context, path string, mode *uint32, user string, r io.Reader) error {
	st, err := c.newStream(false)
	if err != nil {
		return err
	}
	defer c.forget(st)
	if err := c.sendJSON(keeperproto.ChanWriteFile, st.id, keeperproto.WriteFile{Path: path, Mode: mode, User: user}); err != nil {
		return err
	}
	// A cancel releases the stream (the keeper removes the temporary file)
	// and wakes a writer waiting for credit. Every way out that did not
	// commit waits for the keeper's answer, which comes once the temporary
	// file is gone: the caller may look right after the call returns.
	stop := context.AfterFunc(ctx, func() {
		_ = c.send(keeperproto.ChanRelease, st.id, nil)
		st.input.close()
	})
	defer stop()
	abandon := func(cause error) error {
		_ = c.send(keeperproto.ChanRelease, st.id, nil)
		wait, cancel := context.WithTimeout(context.Background(), abandonWait)
		defer cancel()
		_, _ = st.answer(wait, false)
		return cause
	}
	buf := make([]byte, keeperproto.MaxPayload)
	for {
		n, rerr := r.Read(buf)
		if ctx.Err() != nil {
			return abandon(ctx.Err()) // released by the AfterFunc: nothing is written
		}
		for sent := 0; sent < n; {
			k := st.input.take(n - sent)
			if k == 0 {
				if ctx.Err() != nil {
					return abandon(ctx.Err())
				}
				return c.writeAnswer(st, path) // the keeper refused it early
			}
			if err := c.send(keeperproto.ChanStdin, st.id, buf[sent:sent+k]); err != nil {
				return err
			}
			sent += k
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return abandon(rerr)
		}
	}
	if ctx.Err() != nil {
		return abandon(ctx.Err())
	}
	if err := c.send(keeperproto.ChanStdinEOF, st.id, nil); err != nil {
		return err
	}
	return c.writeAnswer(st, path)
}

// writeAnswer waits for the keeper's verdict, whatever ctx does by now:
// once all of the file went, a cancel races the rename, and only the
// keeper knows which won.
func (c *Conn) writeAnswer(st *cstream, path string) error {
	f, err := st.answer(context.Background(), false)
	if err != nil {
		return err
	}
	_, err = decodeResult(f)
	return withPath(err, "write_file", path)
}

// abandonWait bounds the wait for the keeper to clean up a write given up:
// past it (a keeper that does not answer) the call returns anyway.
const abandonWait = 15 * time.Second

func withPath(err error, op, path string) error {
	var fe *FileError
	if errors.As(err, &fe) {
		fe.Op, fe.Path = op, path
	}
	return err
}

// ReadFile streams path's bytes, read as user. The reader is a File: its
// Size is the size announced at open. Close before the end abandons the
// read.
func (c *Conn) ReadFile(ctx context.Context, path, user string) (io.ReadCloser, error) {
	st, err := c.newStream(false)
	if err != nil {
		return nil, err
	}
	if err := c.sendJSON(keeperproto.ChanReadFile, st.id, keeperproto.ReadFile{Path: path, User: user, Window: c.window}); err != nil {
		c.forget(st)
		return nil, err
	}
	f, err := st.answer(ctx, false)
	if err != nil {
		c.forget(st)
		return nil, err
	}
	res, err := decodeResult(f)
	if err != nil {
		c.forget(st)
		return nil, withPath(err, "read_file", path)
	}
	return &fileReader{st: st, size: res.Size, info: res.File}, nil
}

type fileReader struct {
	st   *cstream
	size int64
	info *FileInfo
}

// Info is what the keeper opened (FeatureFileStage), for a caller that
// may take the bytes by other means and Close this read instead.
func (r *fileReader) Info() (FileInfo, bool) {
	if r.info == nil {
		return FileInfo{}, false
	}
	return *r.info, true
}

func (r *fileReader) Read(p []byte) (int, error) { return r.st.stdout.Read(p) }
func (r *fileReader) Size() int64                { return r.size }

func (r *fileReader) Close() error {
	select {
	case <-r.st.exited:
	default:
		_ = r.st.c.send(keeperproto.ChanRelease, r.st.id, nil)
		r.st.broken(io.ErrClosedPipe)
	}
	r.st.c.forget(r.st)
	return nil
}

// ListDir lists at most limit entries of path as user, and whether there
// are more.
func (c *Conn) ListDir(ctx context.Context, path, user string, limit int) ([]Entry, bool, error) {
	res, err := c.request(ctx, keeperproto.ChanListDir, keeperproto.ListDir{Path: path, User: user, Limit: limit})
	if err != nil {
		return nil, false, withPath(err, "list_dir", path)
	}
	out := make([]Entry, 0, len(res.Entries))
	for _, e := range res.Entries {
		out = append(out, Entry{Name: e.Name, Type: e.Type, Size: e.Size, Mtime: time.Unix(0, e.MtimeNS)})
	}
	return out, res.Truncated, nil
}
