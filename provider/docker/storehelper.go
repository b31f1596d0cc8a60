package docker

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
)

// helperRun is one store helper container: the keeper image running "ls"
// or "cat" over a volume mounted read-only, with no network, no
// capabilities but reading any file (CAP_DAC_READ_SEARCH), and nothing else
// of the host or of any sandbox in sight. The keeper follows no symlink
// (internal/beneath); were one ever followed, it could only lead into that
// empty container.
//
// No helper outlives its request. The provider attaches to the helper's
// stdin and never writes to it; the engine closes that stdin when the
// attach ends (StdinOnce), the keeper (-lease) exits on it, and the engine
// removes the container (AutoRemove). The attach ends with Close, with the
// request's context, and with the resident's own death, since the engine
// sees the connection drop. A helper created and never started (the
// resident died between create and start) runs nothing to exit: the start
// sweep of the next resident removes it (sweep.go).
type helperRun struct {
	id          string
	headerTimer *time.Timer
	headerLate  atomic.Bool
	hijack      client.HijackedResponse
	stdout      *bufio.Reader
	stderr      *lockedBuffer
	done        chan struct{}
	close       func()
}

func (p *Provider) storeHelper(ctx context.Context, volume, path string, args ...string) (*helperRun, error) {
	id, err := p.createStoreHelper(ctx, volume, path, args...)
	if err != nil {
		return nil, err
	}
	return p.startStoreHelper(ctx, id)
}

// createStoreHelper checks the volume and the path and creates the helper
// container, not yet started. The caller owns the container: it starts it
// (startStoreHelper) or removes it (removeHelper).
func (p *Provider) createStoreHelper(ctx context.Context, volume, path string, args ...string) (string, error) {
	if !volumeName.MatchString(volume) {
		return "", protocol.Errorf(protocol.KindInvalidRequest, "volume name %q is not valid", volume)
	}
	if strings.ContainsRune(path, 0) || dotDot(path) {
		return "", protocol.Errorf(protocol.KindInvalidRequest, "path %q: '..' and NUL are not allowed in store paths", path)
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	refs, err := p.ensureHelpers(ctx)
	if err != nil {
		return "", err
	}
	pids, mem := int64(32), int64(64<<20)
	created, err := p.cli.ContainerCreate(cctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: refs.image, Cmd: args, Labels: baseLabels(RoleStoreHelper), NetworkDisabled: true,
			AttachStdout: true, AttachStderr: true,
			// The lease: the engine closes stdin when the attach ends.
			AttachStdin: true, OpenStdin: true, StdinOnce: true},
		HostConfig: &container.HostConfig{
			AutoRemove: true, NetworkMode: "none", ReadonlyRootfs: true,
			// Attach streams without a log driver; json-file would also
			// write every byte of the file to disk, escaped, at 2.5x the cost.
			LogConfig: container.LogConfig{Type: "none"},
			CapDrop:   []string{"ALL"}, CapAdd: []string{"DAC_READ_SEARCH"}, SecurityOpt: []string{"no-new-privileges"},
			Resources: container.Resources{PidsLimit: &pids, Memory: mem, MemorySwap: mem},
			Mounts:    []mount.Mount{{Type: mount.TypeVolume, Source: volume, Target: keeperproto.StoreRoot, ReadOnly: true, VolumeOptions: &mount.VolumeOptions{NoCopy: true}}},
		},
	})
	if err != nil {
		return "", classify(cctx, "store helper create", err)
	}
	return created.ID, nil
}

// startStoreHelper attaches to a created helper and starts it. On error
// the container is gone.
func (p *Provider) startStoreHelper(ctx context.Context, id string) (*helperRun, error) {
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	// Attach before start, so not a byte of output is missed.
	// Stdin is the helper's lease (see helperRun): never written, never
	// half-closed, it ends only with the whole connection.
	att, err := p.cli.ContainerAttach(cctx, id, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		p.removeHelper(id)
		return nil, classify(cctx, "store helper attach", err)
	}
	run := &helperRun{id: id, hijack: att.HijackedResponse, stderr: &lockedBuffer{}, done: make(chan struct{})}
	pr, pw := io.Pipe()
	run.stdout = bufio.NewReaderSize(pr, keeperproto.MaxStatusLine)
	go func() {
		defer close(run.done)
		_, err := stdcopy.StdCopy(pw, run.stderr, att.Reader)
		pw.CloseWithError(err)
	}()
	release := sync.OnceFunc(func() {
		att.Close()
		pr.Close()
		<-run.done
		p.removeHelper(id)
	})
	// The request's end (host cancel, shutdown, expiry) closes the helper,
	// so a read blocked on its stream (an engine frozen mid-read) returns
	// at once instead of holding the request, and the container goes.
	stop := context.AfterFunc(ctx, release)
	run.close = func() {
		stop()
		run.headerTimer.Stop()
		release()
	}
	// A helper answers its header line at once; an engine that does not
	// pass it on within one control call's bound is hung (transient).
	run.headerTimer = time.AfterFunc(p.timing.api, func() {
		run.headerLate.Store(true)
		release()
	})
	if _, err := p.cli.ContainerStart(cctx, id, client.ContainerStartOptions{}); err != nil {
		run.Close()
		return nil, classify(cctx, "store helper start", err)
	}
	return run, nil
}

// Close ends the helper: connection closed, container removed (a no-op
// when it already removed itself).
func (r *helperRun) Close() error {
	r.close()
	return nil
}

// headerRead stops the header bound once the helper's first line is in.
func (r *helperRun) headerRead() { r.headerTimer.Stop() }

// failure explains output that could not be parsed, with what the helper
// said on stderr.
func (r *helperRun) failure(op string, err error) error {
	if r.headerLate.Load() {
		return kindErr(protocol.KindTransient, errEngineTimeout, "%s: store helper", op)
	}
	if msg := strings.TrimSpace(r.stderr.String()); msg != "" {
		return protocol.Errorf(protocol.KindInternal, "%s: store helper: %s", op, msg)
	}
	return protocol.Errorf(protocol.KindTransient, "%s: store helper output: %v", op, err)
}

func dotDot(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

// lockedBuffer collects a small stream written by one goroutine and read by
// another; it keeps the first 4 KiB.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := 4096 - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
