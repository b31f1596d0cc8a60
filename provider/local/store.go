package local

import (
	"context"
	"errors"
	"fmt"
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

// listBatch is how many directory entries ListDir reads per call, so a huge
// directory is never read whole to answer a small limit.
const listBatch = 256

// ListVolumes lists the volume directories owner may browse (p.access).
// A volume with no record (made by hand) has its directory's mtime as
// created_at.
func (p *Provider) ListVolumes(ctx context.Context, owner provider.Owner) ([]protocol.Volume, error) {
	entries, err := os.ReadDir(p.volumes)
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	out := []protocol.Volume{}
	for _, e := range entries {
		if !e.IsDir() || !validVolumeName(e.Name()) {
			continue
		}
		vm, recorded := p.readVolumeMeta(e.Name())
		if p.access(owner, e.Name(), vm) == provider.VolumeHidden {
			continue
		}
		v := protocol.Volume{Name: e.Name(), CreatedAt: vm.CreatedAt}
		if !recorded {
			if info, err := e.Info(); err == nil {
				v.CreatedAt = info.ModTime().UTC()
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// openVolume opens a volume owner may browse as an os.Root: every later
// lookup in it is resolved by the kernel beneath it, so neither ".." nor a
// symlink (absolute or relative) can reach a file outside. Any other volume
// is missing, in the very words of a missing one.
func (p *Provider) openVolume(owner provider.Owner, name string) (*os.Root, error) {
	if !validVolumeName(name) {
		return nil, provider.VolumeNotFound(name)
	}
	if vm, _ := p.readVolumeMeta(name); p.access(owner, name, vm) == provider.VolumeHidden {
		return nil, provider.VolumeNotFound(name)
	}
	r, err := os.OpenRoot(p.volumeDir(name))
	if err != nil {
		return nil, provider.VolumeNotFound(name)
	}
	return r, nil
}

// ListDir lists at most limit entries (limit <= 0: all) of a directory in a
// volume, reading it in batches and stopping as soon as it knows there are
// more. Entries are described without following symlinks.
func (p *Provider) ListDir(ctx context.Context, owner provider.Owner, root, dirPath string, limit int) ([]protocol.DirEntry, bool, error) {
	rel, err := storeRel(dirPath)
	if err != nil {
		return nil, false, err
	}
	r, err := p.openVolume(owner, root)
	if err != nil {
		return nil, false, err
	}
	defer r.Close()
	if info, err := r.Stat(rel); err != nil {
		return nil, false, fsError("list_dir", dirPath, err)
	} else if !info.IsDir() {
		return nil, false, protocol.Errorf(protocol.KindInvalidRequest, "list_dir %q: not a directory", dirPath)
	}
	// O_DIRECTORY|O_NONBLOCK: if the path was swapped for a FIFO since the
	// Stat, the open fails instead of blocking.
	dir, err := r.OpenFile(rel, os.O_RDONLY|oDirectory|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false, fsError("list_dir", dirPath, err)
	}
	defer dir.Close()
	out := []protocol.DirEntry{}
	truncated := false
	for !truncated {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		batch, err := dir.ReadDir(listBatch)
		for _, e := range batch {
			if limit > 0 && len(out) == limit {
				truncated = true
				break
			}
			out = append(out, describe(r, rel, e))
		}
		if errors.Is(err, io.EOF) || len(batch) == 0 {
			break
		}
		if err != nil {
			return nil, false, fsError("list_dir", dirPath, err)
		}
	}
	slices.SortFunc(out, func(a, b protocol.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, truncated, nil
}

// describe stats an entry through the root (Lstat: a symlink is reported as
// one, its target is never looked at).
func describe(r *os.Root, dir string, e fs.DirEntry) protocol.DirEntry {
	d := protocol.DirEntry{Name: e.Name(), Type: protocol.EntryOther}
	info, err := r.Lstat(path.Join(dir, e.Name()))
	if err != nil {
		return d // vanished meanwhile: list the name, no details
	}
	switch mode := info.Mode(); {
	case mode.IsRegular():
		d.Type = protocol.EntryFile
	case mode.IsDir():
		d.Type = protocol.EntryDir
	case mode&fs.ModeSymlink != 0:
		d.Type = protocol.EntrySymlink
	}
	d.Size, d.Mtime = info.Size(), info.ModTime().UTC()
	return d
}

// ReadFile opens a regular file in a volume for streaming. The file stays
// readable after the root is closed.
func (p *Provider) ReadFile(ctx context.Context, owner provider.Owner, root, filePath string) (io.ReadCloser, error) {
	rel, err := storeRel(filePath)
	if err != nil {
		return nil, err
	}
	r, err := p.openVolume(owner, root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if info, err := r.Stat(rel); err != nil {
		return nil, fsError("read_file", filePath, err)
	} else if err := regularFile(filePath, info); err != nil {
		return nil, err
	}
	// O_NONBLOCK: a FIFO swapped in since the Stat must not block the open.
	f, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fsError("read_file", filePath, err)
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

func regularFile(p string, info fs.FileInfo) error {
	switch {
	case info.IsDir():
		return protocol.Errorf(protocol.KindInvalidRequest, "read_file %q: is a directory", p)
	case !info.Mode().IsRegular():
		return protocol.Errorf(protocol.KindInvalidRequest, "read_file %q: not a regular file", p)
	}
	return nil
}
