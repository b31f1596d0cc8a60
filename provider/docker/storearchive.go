package docker

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/provider/docker/internal/keeperproto"
)

// The archive fast path of ReadFile. A started helper streams the file
// through its attach stream, which the engine copies between processes and
// frames; the engine's archive endpoint reads the file itself, from a
// helper container that is created and never started, as fast as any
// client of that endpoint can (a started helper reached a third of that).
// It resolves paths its own way, though: symlinks are followed in the scope of
// the container's root, not of the volume. So it is used only for a path
// the engine reports, one component at a time, as plain directories ending
// in a regular file, and whose file the archive stream describes exactly
// as the walk saw it. Anything else (a symlink anywhere, a directory, a
// FIFO, a missing path, a file that changed meanwhile, an engine error)
// falls back to starting the same container, whose keeper resolves the
// path with os.Root and gives the answers it always gave, errors included.
//
// The window that remains: a sandbox mounting the same volume swaps a
// directory on the path for a symlink between the walk and the read. The
// engine then resolves the link inside the helper's root, which holds only
// the keeper image (the public keeper binary, the empty mount point) and
// what the engine adds to every container at create: empty files (/etc/hosts,
// /etc/resolv.conf, /etc/hostname, /.dockerenv, /dev/console), empty
// directories (/proc, /sys, /dev) and /etc/mtab, a link to /proc/mounts. A
// never-started container with network "none" has no hosts, resolv.conf or
// hostname files of its own (the engine makes and bind-mounts those at
// start: HostsPath, ResolvConfPath and HostnamePath stay empty), nothing is
// mounted on /proc, and the helper mounts no other volume, so nothing of the
// host, of another volume or of a sandbox is there to read. The stat check
// (size, mode and modification time to the nanosecond, from the engine's own
// lstat at read time) narrows it further: it refuses any file but one whose
// metadata the sandbox could copy onto the file it swapped out, which leaves
// the empty files and the keeper binary.
//
// While it streams an archive, the engine holds the helper container's
// lock: anything else asked of that container (inspect, start, remove)
// waits until the stream ends, which is why every path below ends the
// stream before it removes or starts the helper.

// maxWalk is the deepest path the archive path walks: each component is one
// stat, a few milliseconds of the engine mounting the helper's root, and
// past this many, starting the keeper costs less.
const maxWalk = 16

// errUseKeeper says the fast path does not apply: read through the keeper.
var errUseKeeper = errors.New("store read_file: not a plain regular file for the archive path")

// readFileArchive reads storePath, a path inside the volume (cleaned as the
// keeper cleans it: "/a/./b/" is "a/b"), from the created
// helper container id through the archive API. It returns errUseKeeper
// when the keeper must answer instead, with the container left as it was;
// any other error is final (an engine that is hung, or the request's end)
// and the caller removes the container. On success the reader owns the
// container and removes it when closed or when ctx ends.
func (p *Provider) readFileArchive(ctx context.Context, id, storePath string) (io.ReadCloser, error) {
	rel := strings.TrimPrefix(path.Clean("/"+storePath), "/")
	want, err := p.walkPlain(ctx, id, rel)
	if err != nil {
		return nil, err
	}
	return p.openArchive(ctx, id, rel, want)
}

// openArchive streams rel's bytes out of the archive API when the engine
// still describes it as want; errUseKeeper when it does not.
func (p *Provider) openArchive(ctx context.Context, id, rel string, want container.PathStat) (io.ReadCloser, error) {
	streamCtx, cancelStream := context.WithCancelCause(ctx)
	// The answer's headers, and the tar header that comes with them, are
	// bounded like a control call; the bytes after that are not (a large
	// file takes as long as it takes), and the request's end stops them.
	headerBound := time.AfterFunc(p.timing.api, func() { cancelStream(errEngineTimeout) })
	abandon := func() {
		headerBound.Stop()
		cancelStream(errUseKeeper)
	}
	res, err := p.cli.CopyFromContainer(streamCtx, id, client.CopyFromContainerOptions{SourcePath: keeperproto.StoreRoot + "/" + rel})
	if err != nil {
		err = archiveErr(streamCtx, "store archive", err)
		abandon()
		return nil, err
	}
	if !sameFile(res.Stat, want) {
		res.Content.Close()
		abandon()
		return nil, errUseKeeper
	}
	tr := tar.NewReader(res.Content)
	hdr, err := tr.Next()
	if err != nil || hdr.Typeflag != tar.TypeReg || hdr.Size != want.Size || hdr.Name != path.Base(rel) {
		if err != nil {
			err = archiveErr(streamCtx, "store archive", err)
		} else {
			err = errUseKeeper
		}
		res.Content.Close()
		abandon()
		return nil, err
	}
	if !headerBound.Stop() {
		// The bound fired as the header came in: the stream is cut.
		res.Content.Close()
		return nil, classify(streamCtx, "store archive", context.Cause(streamCtx))
	}
	f := &archiveFile{helperID: id, tar: tr, left: hdr.Size}
	release := sync.OnceFunc(func() {
		cancelStream(errArchiveClosed)
		res.Content.Close()
		p.removeHelper(id)
	})
	// The request's end (host cancel, shutdown, expiry) ends the HTTP
	// stream at once, also one an engine froze mid-read, and the container
	// goes, even if the reader is never closed.
	stop := context.AfterFunc(ctx, release)
	f.close = func() {
		stop()
		release()
	}
	return f, nil
}

// errArchiveClosed ends an archive stream that its reader closed.
var errArchiveClosed = errors.New("store archive closed")

// walkPlain stats every component of rel inside the volume and returns the
// last one's stat when all before it are directories and it is a regular
// file, none of them a symlink (the engine's stat does not follow the last
// component, and walking every prefix makes each one the last once).
func (p *Provider) walkPlain(ctx context.Context, id, rel string) (container.PathStat, error) {
	parts := strings.Split(rel, "/")
	if rel == "" || len(parts) > maxWalk {
		return container.PathStat{}, errUseKeeper
	}
	at := keeperproto.StoreRoot
	for i, part := range parts {
		at += "/" + part
		st, err := p.statPath(ctx, id, at)
		if err != nil {
			return container.PathStat{}, err
		}
		last := i == len(parts)-1
		if st.Mode&fs.ModeSymlink != 0 || (!last && !st.Mode.IsDir()) || (last && !st.Mode.IsRegular()) {
			return container.PathStat{}, errUseKeeper
		}
		if last {
			return st, nil
		}
	}
	return container.PathStat{}, errUseKeeper
}

func (p *Provider) statPath(ctx context.Context, id, at string) (container.PathStat, error) {
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	res, err := p.cli.ContainerStatPath(cctx, id, client.ContainerStatPathOptions{Path: at})
	if err != nil {
		return container.PathStat{}, archiveErr(cctx, "store stat", err)
	}
	return res.Stat, nil
}

// archiveErr keeps the errors the keeper could not do better on (the
// engine hung: transient; the request ended) and sends the keeper every
// other one (not found, a path the engine refuses), so its answer and its
// words stay the ones the host always had.
func archiveErr(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return classify(ctx, what, err)
	}
	return errUseKeeper
}

// sameFile says the engine's stat at read time is of the file the walk
// found: a regular file with the same size, mode and modification time.
func sameFile(got, want container.PathStat) bool {
	return got.Mode.IsRegular() && got.Mode == want.Mode && got.Size == want.Size && got.Mtime.Equal(want.Mtime)
}
