//go:build linux

package local

import (
	"bytes"
	"context"
	"errors"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/protocol"
)

// writeFileInSandbox is write_file of an isolated sandbox: the keeper
// writes the file inside the sandbox, as its user (root without any
// capability), so the sandbox's own permissions decide (a read-only file
// or directory refuses it) and the path means what it means to a command
// (a volume at its mount, /etc read-only). Atomic: a temporary file beside
// it, renamed into place.
func (p *Provider) writeFileInSandbox(ctx context.Context, id, filePath string, data []byte, mode *uint32) error {
	m, err := p.lookup(id)
	if err != nil {
		return err
	}
	rel := workRel(m.Spec.Workdir, filePath)
	if rel == "." {
		return protocol.Errorf(protocol.KindInvalidRequest, "write_file %q: is a directory", filePath)
	}
	if p.inSystemDir(rel) {
		return protocol.Errorf(protocol.KindInvalidRequest, "write_file %q: read-only file system (a host system directory, shown read-only)", filePath)
	}
	_, conn, err := p.channelFor(ctx, id, m)
	if err != nil {
		return initError(err)
	}
	if mode != nil {
		perm := *mode & 0o777 // only the permission bits, as before
		mode = &perm
	}
	return fileError(filePath, conn.WriteFile(ctx, "/"+rel, mode, "", bytes.NewReader(data)))
}

// fileError maps a refused file operation to the protocol's kinds.
func fileError(filePath string, err error) error {
	var fe *channel.FileError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe):
		kind := protocol.Kind(fe.Kind)
		if !kind.Known() {
			kind = protocol.KindInvalidRequest
		}
		return &protocol.Error{Kind: kind, Msg: "write_file " + filePath + ": " + fe.Msg, Err: err}
	case errors.Is(err, channel.ErrBroken):
		return &protocol.Error{Kind: protocol.KindTransient, Msg: "write_file: the sandbox's channel broke", Err: err}
	}
	return err
}
