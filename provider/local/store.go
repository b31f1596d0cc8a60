package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/resident-dev/resident/protocol"
)

// listBatch is how many directory entries ListDir reads per call, so a huge
// directory is never read whole to answer a small limit.
const listBatch = 256

func (p *Provider) volumeDir(name string) string { return filepath.Join(p.volumes, name) }

type volumeMeta struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// ensureVolume creates a volume the first time a spec names it and records
// when; the record sits beside the volume, never inside what a host browses.
func (p *Provider) ensureVolume(name string) (string, error) {
	dir := p.volumeDir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("volume %s: %w", name, err)
	}
	if _, err := os.Stat(filepath.Join(p.volumeMeta, name+".json")); errors.Is(err, fs.ErrNotExist) {
		data, _ := json.Marshal(volumeMeta{Name: name, CreatedAt: p.now().UTC()})
		if err := writeFileAtomic(p.volumeMeta, name+".json", data, 0o600); err != nil {
			return "", fmt.Errorf("volume %s: %w", name, err)
		}
	}
	return dir, nil
}

// ListVolumes lists every volume directory. A volume made by hand (or by a
// test) has no record; its directory's mtime stands in for created_at.
func (p *Provider) ListVolumes(ctx context.Context) ([]protocol.Volume, error) {
	entries, err := os.ReadDir(p.volumes)
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	out := []protocol.Volume{}
	for _, e := range entries {
		if !e.IsDir() || !validVolumeName(e.Name()) {
			continue
		}
		v := protocol.Volume{Name: e.Name()}
		var vm volumeMeta
		if data, err := os.ReadFile(filepath.Join(p.volumeMeta, e.Name()+".json")); err == nil && json.Unmarshal(data, &vm) == nil {
			v.CreatedAt = vm.CreatedAt
		} else if info, err := e.Info(); err == nil {
			v.CreatedAt = info.ModTime().UTC()
		}
		v.CreatedAt = v.CreatedAt.Truncate(time.Second) // as every provider gives it
		out = append(out, v)
	}
	return out, nil
}

// openVolume opens a volume as an os.Root: every later lookup in it is
// resolved by the kernel beneath it, so neither ".." nor a symlink (absolute
// or relative) can reach a file outside.
func (p *Provider) openVolume(name string) (*os.Root, error) {
	if !validVolumeName(name) {
		return nil, protocol.Errorf(protocol.KindNotFound, "volume %q not found", name)
	}
	r, err := os.OpenRoot(p.volumeDir(name))
	if err != nil {
		return nil, protocol.Errorf(protocol.KindNotFound, "volume %q not found", name)
	}
	return r, nil
}

// ListDir lists at most limit entries (limit <= 0: all) of a directory in a
// volume, reading it in batches and stopping as soon as it knows there are
// more. Entries are described without following symlinks.
func (p *Provider) ListDir(ctx context.Context, root, dirPath string, limit int) ([]protocol.DirEntry, bool, error) {
	rel, err := storeRel(dirPath)
	if err != nil {
		return nil, false, err
	}
	r, err := p.openVolume(root)
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
func (p *Provider) ReadFile(ctx context.Context, root, filePath string) (io.ReadCloser, error) {
	rel, err := storeRel(filePath)
	if err != nil {
		return nil, err
	}
	r, err := p.openVolume(root)
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
