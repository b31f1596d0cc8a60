package docker

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/docker/internal/keeperproto"
)

// maxListing bounds a listing's JSON: 16 MiB is far beyond any sane limit
// of entries and still a bound.
const maxListing = 16 << 20

// The store is Docker named volumes labelled as store volumes. A volume
// named in spec.volumes is created (labelled) when missing; an existing one
// without our label is refused, so a sandbox never mounts a volume someone
// else made (a database's data, say).
func (p *Provider) ensureStoreVolume(ctx context.Context, name string, owner provider.Owner) error {
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	v, err := p.cli.VolumeInspect(cctx, name, client.VolumeInspectOptions{})
	switch {
	case err == nil && !isManaged(v.Volume.Labels, RoleStore):
		return protocol.Errorf(protocol.KindInvalidRequest, "volume %q exists but is not a resident store volume", name)
	case err == nil:
		return nil
	case !cerrdefs.IsNotFound(err):
		return classify(cctx, "volume inspect", err)
	}
	labels := baseLabels(RoleStore)
	labels[owner.Key] = owner.InstallID
	if _, err := p.cli.VolumeCreate(cctx, client.VolumeCreateOptions{Name: name, Labels: labels}); err != nil {
		return classify(cctx, "volume create", err)
	}
	p.log.Info("store volume created", zap.String("volume", name))
	return nil
}

// ListVolumes lists the store volumes, by name.
func (p *Provider) ListVolumes(ctx context.Context) ([]protocol.Volume, error) {
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	list, err := p.cli.VolumeList(cctx, client.VolumeListOptions{Filters: roleFilter(RoleStore)})
	if err != nil {
		return nil, classify(cctx, "volume list", err)
	}
	out := []protocol.Volume{}
	for _, v := range list.Items {
		if !isManaged(v.Labels, RoleStore) {
			continue
		}
		created, _ := time.Parse(time.RFC3339Nano, v.CreatedAt)
		out = append(out, protocol.Volume{Name: v.Name, CreatedAt: created.UTC()})
	}
	slices.SortFunc(out, func(a, b protocol.Volume) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ListDir lists one directory of a store volume, at most limit entries in
// directory order (reading only that much of a huge directory).
func (p *Provider) ListDir(ctx context.Context, root, path string, limit int) ([]protocol.DirEntry, bool, error) {
	if limit <= 0 {
		limit = 1000
	}
	ctx, cancel := p.callCtx(ctx) // one bound for the whole call
	defer cancel()
	run, err := p.storeHelper(ctx, root, path, keeperproto.CmdLs, "-limit", strconv.Itoa(limit), "--", path)
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
// that ends short of the announced size is an error. A plain file is read
// through the archive API from a helper that is never started
// (storearchive.go); every other path is resolved and read by the keeper in
// that same helper, started.
func (p *Provider) ReadFile(ctx context.Context, root, path string) (io.ReadCloser, error) {
	id, err := p.createStoreHelper(ctx, root, path, keeperproto.CmdCat, "--", path)
	if err != nil {
		return nil, err
	}
	rc, err := p.readFileArchive(ctx, id, path)
	switch {
	case err == nil:
		return rc, nil
	case !errors.Is(err, errUseKeeper):
		p.removeHelper(id)
		return nil, err
	}
	return p.readFileKeeper(ctx, id, root, path)
}

// readFileKeeper starts the created helper id, whose keeper opens the path
// with os.Root and answers a header line, then the bytes.
func (p *Provider) readFileKeeper(ctx context.Context, id, root, path string) (io.ReadCloser, error) {
	run, err := p.startStoreHelper(ctx, id)
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
