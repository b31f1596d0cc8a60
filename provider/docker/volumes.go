package docker

import (
	"context"
	"encoding/json"
	"io"
	"strconv"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// maxListing bounds a listing's JSON: 16 MiB is far beyond any sane limit
// of entries and still a bound.
const maxListing = 16 << 20

// ListDir lists one directory of a store volume, at most limit entries in
// directory order (reading only that much of a huge directory).
func (p *Provider) ListDir(ctx context.Context, owner provider.Owner, root, path string, limit int) ([]protocol.DirEntry, bool, error) {
	if limit <= 0 {
		limit = 1000
	}
	ctx, cancel := p.callCtx(ctx) // one bound for the whole call
	defer cancel()
	if err := p.checkStoreVolume(ctx, owner, root); err != nil {
		return nil, false, err
	}
	run, err := p.storeHelper(ctx, root, path, keeperproto.CmdLs, "-lease", "-limit", strconv.Itoa(limit), "--", path)
	if err != nil {
		return nil, false, err
	}
	defer run.Close()
	var h keeperproto.Header
	err = json.NewDecoder(io.LimitReader(run.stdout, maxListing)).Decode(&h)
	run.headerRead()
	if err != nil {
		return nil, false, run.failure("list_dir", err)
	}
	if h.Error != "" {
		return nil, false, protocol.Errorf(protocol.Kind(h.Kind), "list_dir %s:%s: %s", root, path, h.Error)
	}
	entries := make([]protocol.DirEntry, 0, len(h.Entries))
	for _, e := range h.Entries {
		entries = append(entries, protocol.DirEntry{Name: e.Name, Type: e.Type, Size: e.Size, Mtime: time.Unix(0, e.MtimeNS).UTC()})
	}
	return entries, h.Truncated, nil
}

// ReadFile streams one regular file of a store volume. The bytes flow from
// the engine as the reader asks for them; nothing is buffered whole. A read
// that ends short of the announced size is an error. The helper's keeper
// opens the path in one step beneath the volume, following no symlink
// (internal/beneath), and answers a header line, then the bytes.
//
// Not the engine's archive API, though it reads faster: the engine resolves
// an archive path in the scope of the container's root, not the volume's,
// and between any check of the path and its read a sandbox mounting the
// volume can swap a directory on it for a symlink out of the volume.
func (p *Provider) ReadFile(ctx context.Context, owner provider.Owner, root, path string) (io.ReadCloser, error) {
	if err := p.checkStoreVolume(ctx, owner, root); err != nil {
		return nil, err
	}
	run, err := p.storeHelper(ctx, root, path, keeperproto.CmdCat, "-lease", "--", path)
	if err != nil {
		return nil, err
	}
	line, err := run.stdout.ReadSlice('\n')
	run.headerRead()
	if err != nil {
		run.Close()
		return nil, run.failure("read_file", err)
	}
	var h keeperproto.Header
	if err := json.Unmarshal(line, &h); err != nil {
		run.Close()
		return nil, run.failure("read_file", err)
	}
	if h.Error != "" {
		run.Close()
		return nil, protocol.Errorf(protocol.Kind(h.Kind), "read_file %s:%s: %s", root, path, h.Error)
	}
	return &sizedReader{run: run, left: h.Size}, nil
}

// sizedReader returns exactly the announced bytes, then io.EOF.
type sizedReader struct {
	run  *helperRun
	left int64
}

func (r *sizedReader) Read(b []byte) (int, error) {
	if r.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > r.left {
		b = b[:r.left]
	}
	n, err := r.run.stdout.Read(b)
	r.left -= int64(n)
	if err == io.EOF && r.left > 0 {
		return n, protocol.Errorf(protocol.KindTransient, "read_file: stream ended %d bytes early (file changed or unreadable)", r.left)
	}
	if err == io.EOF {
		err = nil
	}
	return n, err
}

func (r *sizedReader) Close() error { return r.run.Close() }
