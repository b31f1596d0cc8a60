package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// WriteFile puts data at path inside the sandbox, as a command of the
// sandbox would write it: with the resident's own user (local's sandbox
// user) and its permissions, so a read-only file or a directory it cannot
// write is refused, and the modification time is now. A relative path is
// taken in the work directory, an absolute one inside the root, which is
// "/" for the sandbox's commands too when they run isolated; a path below
// a volume mount lands in the volume, and one in a host system directory
// an isolated sandbox sees read-only is refused. Only the permission bits of
// mode are honoured: setuid and friends make no sense for a sandbox that
// isolates nothing. With no mode, a new file gets provider.DefaultFileMode
// and an existing one keeps its mode.
func (p *Provider) WriteFile(ctx context.Context, sandboxID, filePath string, data []byte, mode *uint32) error {
	if err := p.Start(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return p.goneOr(sandboxID, p.writeFile(sandboxID, filePath, data, mode))
}

func (p *Provider) writeFile(sandboxID, filePath string, data []byte, mode *uint32) error {
	m, err := p.lookup(sandboxID)
	if err != nil {
		return err
	}
	base, rel := p.resolve(p.rootOf(sandboxID), m.Spec.Volumes, workRel(m.Spec.Workdir, filePath))
	if rel == "." {
		return protocol.ReasonError(protocol.ReasonIsDirectory, protocol.FieldPath, fmt.Sprintf("write_file %q: is a directory", filePath), nil)
	}
	if base == p.rootOf(sandboxID) && p.inSystemDir(rel) {
		return protocol.ReasonError(protocol.ReasonPermissionDenied, protocol.FieldPath, fmt.Sprintf("write_file %q: read-only file system (a host system directory, shown read-only)", filePath), nil)
	}
	r, err := os.OpenRoot(base)
	if err != nil {
		return fsError("write_file", filePath, err)
	}
	defer r.Close()
	if dir := path.Dir(rel); dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return fsError("write_file", filePath, err)
		}
	}
	f, created, err := openForWrite(r, rel)
	if err != nil {
		return fsError("write_file", filePath, err)
	}
	err = fillFile(f, created, data, mode)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, errNotRegular) {
		return protocol.Errorf(protocol.KindInvalidRequest, "write_file %q: not a regular file", filePath)
	}
	if err != nil {
		return fsError("write_file", filePath, err)
	}
	return nil
}

var errNotRegular = errors.New("not a regular file")

// openForWrite opens rel for writing without truncating it yet, creating it
// when missing. An existing file is opened with the user's own access check,
// which is what refuses a read-only one. O_NONBLOCK: a FIFO at the path must
// fail the type check, not hang the open.
func openForWrite(r *os.Root, rel string) (f *os.File, created bool, err error) {
	f, err = r.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NONBLOCK, provider.DefaultFileMode)
	if err == nil {
		return f, true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, false, err
	}
	f, err = r.OpenFile(rel, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	return f, false, err
}

// fillFile sets the mode first (so a chmod the user may not make changes
// nothing), then replaces the content.
func fillFile(f *os.File, created bool, data []byte, mode *uint32) error {
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return errNotRegular
	}
	switch {
	case mode != nil:
		err = f.Chmod(fs.FileMode(*mode) & fs.ModePerm)
	case created:
		err = f.Chmod(provider.DefaultFileMode) // the umask may have cut it at create
	}
	if err == nil {
		err = f.Truncate(0)
	}
	if err == nil {
		_, err = f.Write(data)
	}
	return err
}
