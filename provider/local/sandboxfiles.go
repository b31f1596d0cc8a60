package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// The files of a running local sandbox are reachable from the resident, so
// they are read, listed and written here, with the resident's own user,
// which is local's sandbox user: a file a command of the sandbox could not
// read is refused the same way. A path resolves as the sandbox sees it:
// relative in the work directory, below a volume mount in that volume, in a
// host system directory an isolated sandbox shows read-only on the host.
// Every open goes through os.Root, so no symlink leads out of the sandbox.

// sandboxPath opens the os.Root a sandbox path lives in and the path inside
// it: the sandbox root, a volume, or the host's "/" for a system directory,
// whose files an isolated sandbox sees as the host's own.
func (p *Provider) sandboxPath(sandboxID, filePath string) (r *os.Root, rel string, err error) {
	m, err := p.lookup(sandboxID)
	if err != nil {
		return nil, "", err
	}
	root := p.rootOf(sandboxID)
	base, rel := p.resolve(root, m.Spec.Volumes, workRel(m.Spec.Workdir, filePath))
	if base == root && p.inSystemDir(rel) {
		base = "/"
	}
	r, err = os.OpenRoot(base)
	if err != nil {
		return nil, "", p.goneOr(sandboxID, fsError("sandbox", filePath, err))
	}
	return r, rel, nil
}

// ReadSandboxFile opens a regular file of a running sandbox.
func (p *Provider) ReadSandboxFile(ctx context.Context, sandboxID, filePath string) (io.ReadCloser, error) {
	if err := p.ready(ctx); err != nil {
		return nil, err
	}
	r, rel, err := p.sandboxPath(sandboxID, filePath)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// O_NONBLOCK: opening a FIFO must not wait for a writer.
	f, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, p.goneOr(sandboxID, fsError("read_file", filePath, err))
	}
	info, err := f.Stat()
	if err == nil {
		err = regularFile(filePath, info)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// ListSandboxDir lists a directory of a running sandbox, sorted by name.
func (p *Provider) ListSandboxDir(ctx context.Context, sandboxID, dirPath string, limit int) ([]protocol.DirEntry, bool, error) {
	if err := p.ready(ctx); err != nil {
		return nil, false, err
	}
	r, rel, err := p.sandboxPath(sandboxID, dirPath)
	if err != nil {
		return nil, false, err
	}
	defer r.Close()
	dir, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false, p.goneOr(sandboxID, fsError("list_dir", dirPath, err))
	}
	defer dir.Close()
	out, truncated, err := listOpenDir(ctx, dir, dirPath, limit)
	if err != nil {
		return nil, false, err
	}
	slices.SortFunc(out, func(a, b protocol.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, truncated, nil
}

func (p *Provider) ready(ctx context.Context) error {
	if err := p.Start(); err != nil {
		return err
	}
	return ctx.Err()
}

// WriteFileFrom streams r into a file of a running sandbox, atomically: the
// bytes go to a temporary file beside the target, which is renamed over it
// once whole; any failure removes it. An existing target must be a regular
// file its user may write in place (the rename alone would replace a
// read-only one); a symlink at the path is replaced, not followed.
func (p *Provider) WriteFileFrom(ctx context.Context, sandboxID, filePath string, mode *uint32, src io.Reader) (int64, error) {
	if err := p.ready(ctx); err != nil {
		return 0, err
	}
	n, err := p.writeFrom(ctx, sandboxID, filePath, mode, src)
	return n, p.goneOr(sandboxID, err)
}

func (p *Provider) writeFrom(ctx context.Context, sandboxID, filePath string, mode *uint32, src io.Reader) (int64, error) {
	m, err := p.lookup(sandboxID)
	if err != nil {
		return 0, err
	}
	root := p.rootOf(sandboxID)
	base, rel := p.resolve(root, m.Spec.Volumes, workRel(m.Spec.Workdir, filePath))
	switch {
	case rel == ".":
		return 0, protocol.ReasonError(protocol.ReasonIsDirectory, protocol.FieldPath, "write_file "+filePath+": is a directory", nil)
	case base == root && p.inSystemDir(rel):
		return 0, protocol.ReasonError(protocol.ReasonPermissionDenied, protocol.FieldPath, "write_file "+filePath+": read-only file system (a host system directory, shown read-only)", nil)
	}
	r, err := os.OpenRoot(base)
	if err != nil {
		return 0, fsError("write_file", filePath, err)
	}
	defer r.Close()
	if dir := path.Dir(rel); dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return 0, fsError("write_file", filePath, err)
		}
	}
	perm, err := targetMode(r, rel, filePath, mode)
	if err != nil {
		return 0, err
	}
	tmp := path.Join(path.Dir(rel), ".resident-upload-"+randomHex())
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, fsError("write_file", filePath, err)
	}
	n, err := copyFile(ctx, f, src, perm)
	if err == nil {
		err = r.Rename(tmp, rel)
	}
	if err != nil {
		_ = r.Remove(tmp)
		if errors.Is(err, errNotRegular) || errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrPermission) {
			return 0, fsError("write_file", filePath, err)
		}
		return 0, err
	}
	return n, nil
}

// targetMode is the mode the new file gets: the host's, else the existing
// file's, else the default. An existing target is opened for writing first
// (and closed untouched), which is the user's own access check.
func targetMode(r *os.Root, rel, filePath string, mode *uint32) (fs.FileMode, error) {
	perm := fs.FileMode(provider.DefaultFileMode)
	if mode != nil {
		perm = fs.FileMode(*mode) & fs.ModePerm
	}
	info, err := r.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return perm, nil
	case err != nil:
		return 0, fsError("write_file", filePath, err)
	case info.IsDir():
		return 0, protocol.ReasonError(protocol.ReasonIsDirectory, protocol.FieldPath, "write_file "+filePath+": is a directory", nil)
	case info.Mode()&fs.ModeSymlink != 0:
		return perm, nil
	case !info.Mode().IsRegular():
		return 0, protocol.Errorf(protocol.KindInvalidRequest, "write_file %q: not a regular file", filePath)
	}
	f, err := r.OpenFile(rel, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, fsError("write_file", filePath, err)
	}
	_ = f.Close()
	if mode == nil {
		perm = info.Mode().Perm()
	}
	return perm, nil
}

// copyFile fills the temporary file, stopping between chunks when ctx ends.
func copyFile(ctx context.Context, f *os.File, src io.Reader, perm fs.FileMode) (int64, error) {
	n, err := io.Copy(f, ctxReader{ctx, src})
	if err == nil {
		err = f.Chmod(perm) // after the create: the umask cut it
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}

func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
