package resident

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"syscall"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// filesFake is fakeProvider with every ability of issue 14: sandbox files
// (files, keyed by path), streamed uploads (kept in uploaded once whole; a
// gate, when set, holds the upload before it reads anything), volume admin
// (volumes, a name -> mounted map) and exec user and tty.
type filesFake struct {
	*fakeProvider
	fmu      sync.Mutex
	files    map[string]string
	uploaded map[string]string
	gate     chan struct{}
	reading  chan struct{} // closed when a gated upload has begun
	// plainRead reads the upload as a provider that never looks at ctx
	// while it waits for bytes: only the stream's end can free it.
	plainRead bool
	volumes   map[string]bool
	resized   []protocol.WindowSize
	users     []string
	sizes     map[string]int64 // the size an upload announced, by path
	// lend reads an upload that lends its buffers (provider.LentUpload)
	// with LendTo, as Docker's archive path does; lent counts those.
	lend bool
	lent int
}

var (
	_ provider.SandboxFiles = (*filesFake)(nil)
	_ provider.StreamWriter = (*filesFake)(nil)
	_ provider.VolumeAdmin  = (*filesFake)(nil)
	_ provider.Resizer      = (*ttyProcess)(nil)
)

func newFilesFake() *filesFake {
	return &filesFake{fakeProvider: newFake(), files: map[string]string{}, uploaded: map[string]string{}, volumes: map[string]bool{}, sizes: map[string]int64{}}
}

func (f *filesFake) Info() provider.Info {
	info := f.fakeProvider.Info()
	c := &info.Capabilities
	c.SandboxFiles, c.Upload, c.VolumeAdmin, c.ExecUser, c.TTY = true, true, true, true, true
	return info
}

func (f *filesFake) ReadSandboxFile(_ context.Context, id, path string) (io.ReadCloser, error) {
	f.record("read_file " + id + " " + path)
	f.fmu.Lock()
	defer f.fmu.Unlock()
	if strings.HasSuffix(path, "/") {
		return nil, provider.FileError("read_file", path, syscall.EISDIR)
	}
	content, ok := f.files[path]
	if !ok {
		return nil, protocol.ReasonError(protocol.ReasonNoSuchFile, protocol.FieldPath, "read_file "+path+": no such file or directory", nil)
	}
	return io.NopCloser(strings.NewReader(content)), nil
}

func (f *filesFake) ListSandboxDir(_ context.Context, id, path string, limit int) ([]protocol.DirEntry, bool, error) {
	f.record("list_dir " + id + " " + path)
	f.fmu.Lock()
	defer f.fmu.Unlock()
	var out []protocol.DirEntry
	for name, content := range f.files {
		out = append(out, protocol.DirEntry{Name: name, Type: protocol.EntryFile, Size: int64(len(content))})
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

func (f *filesFake) WriteFileFrom(ctx context.Context, id, path string, _ *uint32, r io.Reader) (int64, error) {
	f.record("upload " + id + " " + path)
	if s, ok := r.(provider.SizedUpload); ok {
		f.fmu.Lock()
		f.sizes[path] = s.UploadSize()
		f.fmu.Unlock()
	}
	if f.gate != nil {
		close(f.reading)
		select {
		case <-f.gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	var buf bytes.Buffer
	if f.plainRead {
		if _, err := io.Copy(&buf, r); err != nil {
			return 0, err
		}
		f.fmu.Lock()
		f.uploaded[path] = buf.String()
		f.fmu.Unlock()
		return int64(buf.Len()), nil
	}
	done := make(chan error, 1)
	go func() {
		if l, ok := r.(provider.LentUpload); ok && f.lend {
			f.fmu.Lock()
			f.lent++
			f.fmu.Unlock()
			_, err := l.LendTo(&buf)
			done <- err
			return
		}
		_, err := io.Copy(&buf, r)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return 0, err
		}
	case <-ctx.Done():
		return 0, ctx.Err() // the resident closes r when the call ends
	}
	f.fmu.Lock()
	f.uploaded[path] = buf.String()
	f.fmu.Unlock()
	return int64(buf.Len()), nil
}

func (f *filesFake) CreateVolume(_ context.Context, _ provider.Owner, name string) error {
	f.fmu.Lock()
	defer f.fmu.Unlock()
	if _, ok := f.volumes[name]; ok {
		return protocol.ReasonError(protocol.ReasonExists, protocol.FieldName, "volume "+name+" exists", nil)
	}
	f.volumes[name] = false
	return nil
}

func (f *filesFake) DeleteVolume(_ context.Context, _ provider.Owner, name string) error {
	f.fmu.Lock()
	defer f.fmu.Unlock()
	mounted, ok := f.volumes[name]
	switch {
	case !ok:
		return provider.VolumeNotFound(name)
	case mounted:
		return protocol.Errorf(protocol.KindConflict, "volume %q is mounted by a running sandbox", name)
	}
	delete(f.volumes, name)
	return nil
}

func (f *filesFake) Exec(ctx context.Context, id string, req provider.ExecRequest) (provider.Process, error) {
	f.fmu.Lock()
	f.users = append(f.users, req.User)
	f.fmu.Unlock()
	if req.TTY == nil {
		return f.fakeProvider.Exec(ctx, id, req)
	}
	req.Argv, req.Stdin = []string{"cat"}, true // a terminal echoes what it is sent
	proc, err := f.fakeProvider.Exec(ctx, id, req)
	if err != nil {
		return nil, err
	}
	return &ttyProcess{Process: proc, f: f}, nil
}

type ttyProcess struct {
	provider.Process
	f *filesFake
}

func (p *ttyProcess) Resize(size protocol.WindowSize) error {
	p.f.fmu.Lock()
	p.f.resized = append(p.f.resized, size)
	p.f.fmu.Unlock()
	return nil
}
