package docker

import (
	"bytes"
	"context"
	"io"
	"path"
	"strings"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider/keeperexec"
)

// A channel-mode sandbox's files are read, listed and written by its
// keeper over the channel, as the sandbox's user (spec.user, else root
// without any capability): the sandbox's own permissions decide, and the
// path means what it means to a command. A write goes to a temporary file
// beside the target, renamed into place; a cancelled or failed one leaves
// nothing, before the call returns. A sandbox on the exec path keeps the
// per-call docker exec of the keeper (sandboxfiles.go, upload.go).

// fileChannel is the channel for a file operation on filePath in a
// channel-mode sandbox whose keeper serves files, the path as the sandbox
// sees it (relative in the work directory) and the user to do it as; ok
// is false for a sandbox that takes the exec path.
func (p *Provider) fileChannel(ctx context.Context, sandboxID, filePath, op string) (conn *channel.Conn, abs, user string, ok bool, err error) {
	if !p.known.has(sandboxID) {
		cctx, cancel := p.callCtx(ctx)
		defer cancel()
		if _, err := p.inspectSandbox(cctx, sandboxID); err != nil {
			return nil, "", "", false, err
		}
	}
	if p.modeOf(sandboxID) != ExecModeChannel {
		return nil, "", "", false, nil
	}
	if strings.ContainsRune(filePath, 0) {
		return nil, "", "", false, protocol.Errorf(protocol.KindInvalidRequest, "%s: path must not contain NUL", op)
	}
	ch, conn, err := p.channelFor(ctx, sandboxID)
	if err != nil {
		return nil, "", "", false, err
	}
	if !conn.Supports(keeperproto.FeatureFiles) {
		return nil, "", "", false, nil
	}
	abs = path.Join("/", filePath)
	if !path.IsAbs(filePath) {
		abs = path.Join("/", ch.dir, filePath)
	}
	return conn, abs, ch.user, true, nil
}

// writeOverChannel is write_file and upload over the channel, streamed
// from src.
func (p *Provider) writeOverChannel(ctx context.Context, conn *channel.Conn, abs, user, filePath string, mode *uint32, src io.Reader) (int64, error) {
	if abs == "/" {
		return 0, protocol.ReasonError(protocol.ReasonIsDirectory, protocol.FieldPath, "write_file "+filePath+": is a directory", nil)
	}
	if mode != nil {
		perm := *mode & 0o777 // only the permission bits, as on the exec path
		mode = &perm
	}
	counted := &keeperexec.CountingReader{R: src}
	err := conn.WriteFile(ctx, abs, mode, user, counted)
	if err != nil && ctx.Err() != nil {
		return 0, ctx.Err()
	}
	return counted.N, keeperexec.FileError("write_file", filePath, err)
}

// writeBytesOverChannel is write_file of data.
func (p *Provider) writeBytesOverChannel(ctx context.Context, conn *channel.Conn, abs, user, filePath string, data []byte, mode *uint32) error {
	_, err := p.writeOverChannel(ctx, conn, abs, user, filePath, mode, bytes.NewReader(data))
	return err
}

// listOverChannel is list_dir over the channel.
func listOverChannel(ctx context.Context, conn *channel.Conn, abs, user, dirPath string, limit int) ([]protocol.DirEntry, bool, error) {
	entries, truncated, err := conn.ListDir(ctx, abs, user, limit)
	if err != nil {
		return nil, false, keeperexec.FileError("list_dir", dirPath, err)
	}
	return keeperexec.Entries(entries), truncated, nil
}
