package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/keeperexec"
)

var (
	_ provider.SandboxFiles = (*Provider)(nil)
	_ provider.StreamWriter = (*Provider)(nil)
)

// Files of a channel pod go through the keeper's file operations, each
// done by a helper the keeper starts as the sandbox's user (spec.user,
// else root without any capability): the sandbox's own permissions decide.

// ReadSandboxFile streams a regular file of a running sandbox.
func (p *Provider) ReadSandboxFile(ctx context.Context, sandboxID, filePath string) (io.ReadCloser, error) {
	pc, abs, err := p.fileChannel(ctx, "read_file", sandboxID, filePath)
	if err != nil {
		return nil, err
	}
	rc, err := pc.conn.ReadFile(ctx, abs, pc.user)
	if err != nil {
		return nil, p.explainExecFailure(ctx, sandboxID, keeperexec.FileError("read_file", filePath, err))
	}
	return rc, nil
}

// ListSandboxDir lists a directory of a running sandbox, sorted by name.
func (p *Provider) ListSandboxDir(ctx context.Context, sandboxID, dirPath string, limit int) ([]protocol.DirEntry, bool, error) {
	pc, abs, err := p.fileChannel(ctx, "list_dir", sandboxID, dirPath)
	if err != nil {
		return nil, false, err
	}
	entries, truncated, err := pc.conn.ListDir(ctx, abs, pc.user, limit)
	if err != nil {
		return nil, false, p.explainExecFailure(ctx, sandboxID, keeperexec.FileError("list_dir", dirPath, err))
	}
	out := make([]protocol.DirEntry, len(entries))
	for i, e := range entries {
		out[i] = protocol.DirEntry{Name: e.Name, Type: e.Type, Size: e.Size, Mtime: e.Mtime}
	}
	slices.SortFunc(out, func(a, b protocol.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, truncated, nil
}

// WriteFileFrom writes a file of any size from r (an upload), atomically:
// the keeper writes beside the target and renames it into place.
func (p *Provider) WriteFileFrom(ctx context.Context, sandboxID, filePath string, mode *uint32, r io.Reader) (int64, error) {
	pc, abs, err := p.fileChannel(ctx, "write_file", sandboxID, filePath)
	if err != nil {
		return 0, err
	}
	return p.writeOverChannel(ctx, sandboxID, pc, abs, filePath, mode, r)
}

func (p *Provider) writeOverChannel(ctx context.Context, sandboxID string, pc podChannel, abs, filePath string, mode *uint32, r io.Reader) (int64, error) {
	if abs == "/" {
		return 0, protocol.ReasonError(protocol.ReasonIsDirectory, protocol.FieldPath, "write_file "+filePath+": is a directory", nil)
	}
	if mode != nil {
		perm := *mode & 0o777 // only the permission bits
		mode = &perm
	}
	counted := &keeperexec.CountingReader{R: r}
	if err := pc.conn.WriteFile(ctx, abs, mode, pc.user, counted); err != nil {
		return counted.N, p.explainExecFailure(ctx, sandboxID, keeperexec.FileError("write_file", filePath, err))
	}
	return counted.N, nil
}

// errNoChannel: the sandbox was made in exec mode; its files go through
// the exec subresource ("keeper put"), and read_file and list_dir are not
// served.
var errNoChannel = protocol.Errorf(protocol.KindInvalidRequest, "sandbox files: this sandbox was made with --provider-opt exec=exec (its keeper serves no channel)")

// fileChannel is the channel for a file operation on filePath, and the
// path as the sandbox sees it (relative: in the container's working
// directory).
func (p *Provider) fileChannel(ctx context.Context, op, sandboxID, filePath string) (podChannel, string, error) {
	if strings.ContainsRune(filePath, 0) {
		return podChannel{}, "", protocol.Errorf(protocol.KindInvalidRequest, "%s: path must not contain NUL", op)
	}
	pc, ok, err := p.channelFor(ctx, sandboxID)
	if err != nil {
		return podChannel{}, "", err
	}
	if !ok {
		return podChannel{}, "", errNoChannel
	}
	abs := path.Join("/", filePath)
	if !path.IsAbs(filePath) {
		abs = path.Join("/", pc.dir(), filePath)
	}
	return pc, abs, nil
}

// writeFileChannel is write_file of a channel pod; ok=false when the pod
// serves no channel (write through "keeper put").
func (p *Provider) writeFileChannel(ctx context.Context, sandboxID, filePath string, data []byte, mode *uint32) (bool, error) {
	pc, abs, err := p.fileChannel(ctx, "write_file", sandboxID, filePath)
	if errors.Is(err, errNoChannel) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	_, err = p.writeOverChannel(ctx, sandboxID, pc, abs, filePath, mode, bytes.NewReader(data))
	return true, err
}
