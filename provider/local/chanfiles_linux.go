//go:build linux

package local

import (
	"bytes"
	"context"
	"io"
	"path"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider/keeperexec"
)

// writeFileInSandbox is write_file of an isolated sandbox: the keeper
// writes the file inside the sandbox, as its user (spec.user, else root
// without any capability), so the sandbox's own permissions decide (a read-only file
// or directory refuses it) and the path means what it means to a command
// (a volume at its mount, /etc read-only). Atomic: a temporary file beside
// it, renamed into place.
func (p *Provider) writeFileInSandbox(ctx context.Context, id, filePath string, data []byte, mode *uint32) error {
	_, err := p.writeFromInSandbox(ctx, id, filePath, mode, bytes.NewReader(data))
	return err
}

// writeFromInSandbox is write_file and upload of an isolated sandbox (see
// writeFileInSandbox), streamed from src.
func (p *Provider) writeFromInSandbox(ctx context.Context, id, filePath string, mode *uint32, src io.Reader) (int64, error) {
	conn, abs, user, err := p.fileChannel(ctx, id, filePath)
	if err != nil {
		return 0, err
	}
	switch {
	case abs == "/":
		return 0, protocol.ReasonError(protocol.ReasonIsDirectory, protocol.FieldPath, "write_file "+filePath+": is a directory", nil)
	case readOnlyPath(abs):
		return 0, protocol.ReasonError(protocol.ReasonPermissionDenied, protocol.FieldPath, "write_file "+filePath+": read-only file system (a host system directory, shown read-only)", nil)
	}
	if mode != nil {
		perm := *mode & 0o777 // only the permission bits, as before
		mode = &perm
	}
	counted := &keeperexec.CountingReader{R: src}
	err = conn.WriteFile(ctx, abs, mode, user, counted)
	return counted.N, keeperexec.FileError("write_file", filePath, err)
}

// readInSandbox is read_file of a running isolated sandbox, read by the
// keeper as the sandbox's user.
func (p *Provider) readInSandbox(ctx context.Context, id, filePath string) (io.ReadCloser, error) {
	conn, abs, user, err := p.fileChannel(ctx, id, filePath)
	if err != nil {
		return nil, err
	}
	rc, err := conn.ReadFile(ctx, abs, user)
	return rc, keeperexec.FileError("read_file", filePath, err)
}

// listInSandbox is list_dir of a running isolated sandbox, by the keeper.
func (p *Provider) listInSandbox(ctx context.Context, id, dirPath string, limit int) ([]protocol.DirEntry, bool, error) {
	conn, abs, user, err := p.fileChannel(ctx, id, dirPath)
	if err != nil {
		return nil, false, err
	}
	entries, truncated, err := conn.ListDir(ctx, abs, user, limit)
	if err != nil {
		return nil, false, keeperexec.FileError("list_dir", dirPath, err)
	}
	return keeperexec.Entries(entries), truncated, nil
}

// fileChannel is the channel for a file operation on filePath, the path
// as the sandbox sees it (relative in the work directory) and the user it
// is done as (spec.user; "" is the keeper's root).
func (p *Provider) fileChannel(ctx context.Context, id, filePath string) (*channel.Conn, string, string, error) {
	m, err := p.lookup(id)
	if err != nil {
		return nil, "", "", err
	}
	_, conn, err := p.channelFor(ctx, id, m)
	if err != nil {
		return nil, "", "", initError(err)
	}
	return conn, path.Clean("/" + workRel(m.Spec.Workdir, filePath)), m.Spec.User, nil
}
