package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/resident-dev/resident/internal/beneath"
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
	if err := p.Start(); err != nil {
		return nil, err
	}
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
		v.CreatedAt = v.CreatedAt.Truncate(time.Second) // as every provider gives it
		out = append(out, v)
	}
	return out, nil
}

// openVolume opens the directory of a volume owner may browse; any other
// volume is missing, in the very words of a missing one. Every path in it
// is then opened relative to it by beneath.Open: resolved and opened by the kernel in one
// step, beneath the volume, through no symlink at all (absolute, relative,
// or one that a process swaps in meanwhile), so no path can reach outside.
func (p *Provider) openVolume(owner provider.Owner, name string) (*os.File, error) {
	if !validVolumeName(name) {
		return nil, provider.VolumeNotFound(name)
	}
	if vm, _ := p.readVolumeMeta(name); p.access(owner, name, vm) == provider.VolumeHidden {
		return nil, provider.VolumeNotFound(name)
	}
	dir, err := os.Open(p.volumeDir(name))
	if err != nil {
		return nil, provider.VolumeNotFound(name)
	}
	return dir, nil
}

// ListDir lists at most limit entries (limit <= 0: all) of a directory in a
// volume, reading it in batches and stopping as soon as it knows there are
// more. Entries are described without following symlinks.
func (p *Provider) ListDir(ctx context.Context, owner provider.Owner, root, dirPath string, limit int) ([]protocol.DirEntry, bool, error) {
	if err := p.Start(); err != nil {
		return nil, false, err
	}
	rel, err := storeRel(dirPath)
	if err != nil {
		return nil, false, err
	}
	vol, err := p.openVolume(owner, root)
	if err != nil {
		return nil, false, err
	}
	defer vol.Close()
	// O_NONBLOCK: a FIFO at the path must not block the open; the type
	// check that follows refuses it.
	dir, err := beneath.Open(vol, rel, os.O_RDONLY|syscall.O_NONBLOCK)
	if err != nil {
		return nil, false, fsError("list_dir", dirPath, err)
	}
	defer dir.Close()
	out, truncated, err := listOpenDir(ctx, dir, dirPath, limit)
	if err != nil {
		return nil, false, err
	}
	slices.SortFunc(out, func(a, b protocol.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, truncated, nil
}

// listOpenDir reads at most limit entries (limit <= 0: all) of an open
// directory in batches, stopping as soon as it knows there are more.
func listOpenDir(ctx context.Context, dir *os.File, dirPath string, limit int) ([]protocol.DirEntry, bool, error) {
	if info, err := dir.Stat(); err != nil {
		return nil, false, fsError("list_dir", dirPath, err)
	} else if !info.IsDir() {
		return nil, false, protocol.ReasonError(protocol.ReasonNotDirectory, protocol.FieldPath, fmt.Sprintf("list_dir %q: not a directory", dirPath), nil)
	}
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
			out = append(out, describe(dir, e))
		}
		if errors.Is(err, io.EOF) || len(batch) == 0 {
			break
		}
		if err != nil {
			return nil, false, fsError("list_dir", dirPath, err)
		}
	}
	return out, truncated, nil
}

// describe stats an entry in the open directory (Lstat: a symlink is
// reported as one, its target is never looked at).
func describe(dir *os.File, e fs.DirEntry) protocol.DirEntry {
	d := protocol.DirEntry{Name: e.Name(), Type: protocol.EntryOther}
	info, err := beneath.Lstat(dir, e.Name())
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
// readable after the volume's directory is closed.
func (p *Provider) ReadFile(ctx context.Context, owner provider.Owner, root, filePath string) (io.ReadCloser, error) {
	if err := p.Start(); err != nil {
		return nil, err
	}
	rel, err := storeRel(filePath)
	if err != nil {
		return nil, err
	}
	vol, err := p.openVolume(owner, root)
	if err != nil {
		return nil, err
	}
	defer vol.Close()
	// O_NONBLOCK: opening a FIFO must not wait for a writer.
	f, err := beneath.Open(vol, rel, os.O_RDONLY|syscall.O_NONBLOCK)
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
		return protocol.ReasonError(protocol.ReasonIsDirectory, protocol.FieldPath, fmt.Sprintf("read_file %q: is a directory", p), nil)
	case !info.Mode().IsRegular():
		return protocol.Errorf(protocol.KindInvalidRequest, "read_file %q: not a regular file", p)
	}
	return nil
}
