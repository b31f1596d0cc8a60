package local

import (
	"context"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/resident-dev/resident/protocol"
)

// defaultFileMode is used when the caller passes mode 0, which would make a
// file nobody can read.
const defaultFileMode = 0o644

// WriteFile puts data at path inside the sandbox (an absolute path is taken
// inside its root; a path below a volume mount lands in the volume),
// creating parent directories. Only permission bits of mode are honoured:
// setuid and friends make no sense for a sandbox that isolates nothing.
func (p *Provider) WriteFile(ctx context.Context, sandboxID, filePath string, data []byte, mode uint32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return p.goneOr(sandboxID, p.writeFile(sandboxID, filePath, data, mode))
}

func (p *Provider) writeFile(sandboxID, filePath string, data []byte, mode uint32) error {
	m, err := p.lookup(sandboxID)
	if err != nil {
		return err
	}
	base, rel := p.resolve(p.rootOf(sandboxID), m.Spec.Volumes, sandboxRel(filePath))
	if rel == "." {
		return protocol.Errorf(protocol.KindInvalidRequest, "write_file %q: is a directory", filePath)
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
	perm := fs.FileMode(mode) & fs.ModePerm
	if mode == 0 {
		perm = defaultFileMode
	}
	// O_NONBLOCK: a FIFO at the path must fail the open, not hang it.
	f, err := r.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NONBLOCK, perm)
	if err != nil {
		return fsError("write_file", filePath, err)
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		_ = f.Close()
		return protocol.Errorf(protocol.KindInvalidRequest, "write_file %q: not a regular file", filePath)
	}
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Chmod(perm) // the umask may have cut the mode at create, and an existing file keeps its old one
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fsError("write_file", filePath, err)
	}
	return nil
}
