//go:build linux

package local

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/protocol"
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
	counted := &countingReader{r: src}
	err = conn.WriteFile(ctx, abs, mode, user, counted)
	return counted.n, fileError("write_file", filePath, err)
}

// readInSandbox is read_file of a running isolated sandbox, read by the
// keeper as the sandbox's user.
func (p *Provider) readInSandbox(ctx context.Context, id, filePath string) (io.ReadCloser, error) {
	conn, abs, user, err := p.fileChannel(ctx, id, filePath)
	if err != nil {
		return nil, err
	}
	rc, err := conn.ReadFile(ctx, abs, user)
	return rc, fileError("read_file", filePath, err)
}

// listInSandbox is list_dir of a running isolated sandbox, by the keeper.
func (p *Provider) listInSandbox(ctx context.Context, id, dirPath string, limit int) ([]protocol.DirEntry, bool, error) {
	conn, abs, user, err := p.fileChannel(ctx, id, dirPath)
	if err != nil {
		return nil, false, err
	}
	entries, truncated, err := conn.ListDir(ctx, abs, user, limit)
	if err != nil {
		return nil, false, fileError("list_dir", dirPath, err)
	}
	out := make([]protocol.DirEntry, len(entries))
	for i, e := range entries {
		out[i] = protocol.DirEntry{Name: e.Name, Type: e.Type, Size: e.Size, Mtime: e.Mtime}
	}
	slices.SortFunc(out, func(a, b protocol.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, truncated, nil
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

// fileError maps a file operation the keeper refused to the protocol's
// reasons and kinds, once.
func fileError(op, filePath string, err error) error {
	var fe *channel.FileError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe):
		msg := op + " " + filePath + ": " + fe.Msg
		if reason := protocol.Reason(fe.Reason); reason.Known() {
			field := fe.Field
			if field == "" {
				field = protocol.FieldPath
			}
			return protocol.ReasonError(reason, field, msg, nil)
		}
		kind := protocol.Kind(fe.Kind)
		if !kind.Known() {
			kind = protocol.KindInvalidRequest
		}
		return &protocol.Error{Kind: kind, Msg: msg}
	case errors.Is(err, channel.ErrBroken):
		return &protocol.Error{Kind: protocol.KindTransient, Msg: op + ": the sandbox's channel broke", Err: err}
	}
	return err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}
