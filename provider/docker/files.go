package docker

import (
	"bytes"
	"context"
	"os"
	"path"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
)

// WriteFile puts a file into a sandbox through the archive API. path is
// taken inside the sandbox: relative to its root, ".." clamped at "/".
// Missing parent directories are created (0755); existing ones are left
// exactly as they are, because the tar names only what is missing (a tar
// entry for /usr/bin would re-chmod the image's /usr/bin). Files and
// directories take the ownership of the container's user (copyUIDGID).
// On a read-only root filesystem only volumes, /tmp and the work
// directory (scratch volumes) are writable.
func (p *Provider) WriteFile(ctx context.Context, sandboxID, filePath string, data []byte, mode uint32) error {
	ctx, cancel := p.callCtx(ctx) // one bound for the whole call
	defer cancel()
	if _, err := p.inspectSandbox(ctx, sandboxID); err != nil {
		return err
	}
	if strings.ContainsRune(filePath, 0) {
		return protocol.Errorf(protocol.KindInvalidRequest, "write_file: path must not contain NUL")
	}
	target := path.Join("/", filePath)
	if target == "/" {
		return protocol.Errorf(protocol.KindInvalidRequest, "write_file %q: is a directory", filePath)
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	base, missing, err := p.existingParent(cctx, sandboxID, target)
	if err != nil {
		return err
	}
	if len(missing) == 0 {
		return protocol.Errorf(protocol.KindInvalidRequest, "write_file %q: is a directory", filePath)
	}
	missing = missing[:len(missing)-1] // the last is the file itself
	entries := make([]tarEntry, 0, len(missing)+1)
	for i := range missing {
		entries = append(entries, tarDir(path.Join(missing[:i+1]...), 0o755))
	}
	rel := path.Join(append(slices.Clone(missing), path.Base(target))...)
	entries = append(entries, tarFile(rel, data, int64(mode&0o777)))
	_, err = p.cli.CopyToContainer(cctx, sandboxID, client.CopyToContainerOptions{
		DestinationPath: base, Content: bytes.NewReader(tarOf(entries...)), CopyUIDGID: true,
	})
	if err != nil {
		if msg := err.Error(); strings.Contains(msg, "read-only") || strings.Contains(msg, "not a directory") || strings.Contains(msg, "cannot overwrite") {
			return kindErr(protocol.KindInvalidRequest, err, "write_file %q", filePath)
		}
		return classify(cctx, "write_file", err)
	}
	return nil
}

// existingParent walks down from "/" to the deepest directory on the way
// to target that exists, and returns it with the names still missing below
// it (the last of which is target's own name). It stops at the first name
// that is missing; target existing as a file or symlink is fine (replaced),
// as a directory it leaves nothing missing. Walking down rather than
// up means the engine is never asked about a path under a file, which it
// answers with a bare 500.
func (p *Provider) existingParent(ctx context.Context, id, target string) (string, []string, error) {
	parts := strings.Split(strings.TrimPrefix(target, "/"), "/")
	dir := "/"
	for i, name := range parts {
		next := path.Join(dir, name)
		st, err := p.cli.ContainerStatPath(ctx, id, client.ContainerStatPathOptions{Path: next})
		switch {
		case cerrdefs.IsNotFound(err):
			return dir, parts[i:], nil
		case err != nil:
			return "", nil, classify(ctx, "write_file stat", err)
		case i == len(parts)-1 && !st.Stat.Mode.IsDir():
			// An existing file is overwritten; an existing symlink is
			// replaced, never written through.
			return dir, parts[i:], nil
		case st.Stat.Mode.IsDir() || st.Stat.Mode&os.ModeSymlink != 0:
			dir = next // a symlink is resolved by the engine, inside the container
		default:
			return "", nil, protocol.Errorf(protocol.KindInvalidRequest, "write_file: %s is not a directory", next)
		}
	}
	return dir, nil, nil
}
