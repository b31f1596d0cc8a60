package docker

import (
	"archive/tar"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"go.uber.org/zap/zaptest"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// fakeArchiveEngine answers the three calls the archive path makes (stat,
// archive, remove) as a test scripts them, so the answers a real engine
// never gives (a tar that is not one regular file, a stat that changed, a
// stream cut short, no answer at all) are tested, deterministically.
type fakeArchiveEngine struct {
	stats    map[string]container.PathStat // by path; missing: 404
	statHang bool
	archive  func(w http.ResponseWriter, r *http.Request)

	mu      sync.Mutex
	removed []string
}

const fakeHelperID = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func (e *fakeArchiveEngine) provider(t *testing.T) *Provider {
	sock := filepath.Join(t.TempDir(), "fake.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(e.serve)}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	p, err := newProvider(provider.Config{Logger: zaptest.NewLogger(t)}, client.WithHost("unix://"+sock))
	if err != nil {
		t.Fatal(err)
	}
	p.timing.api = time.Second
	t.Cleanup(func() { p.Close(); srv.Close(); <-done })
	return p
}

func (e *fakeArchiveEngine) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/_ping"):
		w.Header().Set("Api-Version", "1.41")
	case r.Method == http.MethodDelete:
		e.mu.Lock()
		e.removed = append(e.removed, r.URL.Path)
		e.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodHead && e.statHang:
		<-r.Context().Done()
	case r.Method == http.MethodHead:
		st, ok := e.stats[r.URL.Query().Get("path")]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		setStatHeader(w, st)
	case r.Method == http.MethodGet && e.archive != nil:
		e.archive(w, r)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func setStatHeader(w http.ResponseWriter, st container.PathStat) {
	j, _ := json.Marshal(st)
	w.Header().Set("X-Docker-Container-Path-Stat", base64.StdEncoding.EncodeToString(j))
}

func (e *fakeArchiveEngine) removals() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.removed)
}

var (
	fakeMtime = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	fakeDir   = container.PathStat{Name: "d", Size: 4096, Mode: fs.ModeDir | 0o755, Mtime: fakeMtime}
	fakeFile  = container.PathStat{Name: "f", Size: 10, Mode: 0o644, Mtime: fakeMtime}
)

// answer sends a stat header and a body, as the engine's archive does.
func answer(st container.PathStat, body []byte) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		setStatHeader(w, st)
		_, _ = w.Write(body)
	}
}

func TestStoreArchiveFallsBackOnWhatIsNotOnePlainFile(t *testing.T) {
	file := tarFile("f", []byte("0123456789"), 0o644)
	link := func(tw *tar.Writer) error {
		return tw.WriteHeader(&tar.Header{Name: "f", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"})
	}
	changed := fakeFile
	changed.Mtime = changed.Mtime.Add(time.Nanosecond)
	cases := []struct {
		name    string
		stats   map[string]container.PathStat
		archive func(http.ResponseWriter, *http.Request)
	}{
		{"a symlink on the way", map[string]container.PathStat{"/v/d": {Mode: fs.ModeSymlink | 0o777}, "/v/d/f": fakeFile}, answer(fakeFile, tarOf(file))},
		{"a file on the way", map[string]container.PathStat{"/v/d": fakeFile, "/v/d/f": fakeFile}, answer(fakeFile, tarOf(file))},
		{"missing on the way", map[string]container.PathStat{"/v/d/f": fakeFile}, answer(fakeFile, tarOf(file))},
		{"the last a directory", map[string]container.PathStat{"/v/d": fakeDir, "/v/d/f": fakeDir}, answer(fakeFile, tarOf(file))},
		{"the last a FIFO", map[string]container.PathStat{"/v/d": fakeDir, "/v/d/f": {Mode: fs.ModeNamedPipe | 0o644}}, answer(fakeFile, tarOf(file))},
		{"changed before the read", map[string]container.PathStat{"/v/d": fakeDir, "/v/d/f": fakeFile}, answer(changed, tarOf(file))},
		{"a symlink in the archive", map[string]container.PathStat{"/v/d": fakeDir, "/v/d/f": fakeFile}, answer(fakeFile, tarOf(link))},
		{"another name in the archive", map[string]container.PathStat{"/v/d": fakeDir, "/v/d/f": fakeFile}, answer(fakeFile, tarOf(tarFile("g", []byte("0123456789"), 0o644)))},
		{"another size in the archive", map[string]container.PathStat{"/v/d": fakeDir, "/v/d/f": fakeFile}, answer(fakeFile, tarOf(tarFile("f", []byte("012345678"), 0o644)))},
		{"an empty archive", map[string]container.PathStat{"/v/d": fakeDir, "/v/d/f": fakeFile}, answer(fakeFile, nil)},
		{"the archive refused", map[string]container.PathStat{"/v/d": fakeDir, "/v/d/f": fakeFile}, nil},
	}
	for _, c := range cases {
		e := &fakeArchiveEngine{stats: c.stats, archive: c.archive}
		p := e.provider(t)
		rc, err := p.readFileArchive(testCtx(t), fakeHelperID, "d/f")
		if err == nil {
			data, _ := io.ReadAll(rc)
			rc.Close()
			t.Errorf("%s: read %q through the archive path, want the keeper's", c.name, data)
			continue
		}
		if !errors.Is(err, errUseKeeper) || e.removals() != 0 {
			t.Errorf("%s: %v (%d removals); want errUseKeeper and the helper kept for the keeper", c.name, err, e.removals())
		}
	}

	// A path deeper than maxWalk goes to the keeper without a stat (one
	// would hang here and come back transient).
	deep := strings.Repeat("d/", maxWalk) + "f"
	if _, err := (&fakeArchiveEngine{statHang: true}).provider(t).readFileArchive(testCtx(t), fakeHelperID, deep); !errors.Is(err, errUseKeeper) {
		t.Errorf("a path of %d components: %v, want errUseKeeper", maxWalk+1, err)
	}

	e := &fakeArchiveEngine{stats: map[string]container.PathStat{"/v/d": fakeDir, "/v/d/f": fakeFile}, archive: answer(fakeFile, tarOf(file))}
	p := e.provider(t)
	rc, err := p.readFileArchive(testCtx(t), fakeHelperID, "/d/./f/")
	if err != nil {
		t.Fatalf("a plain file: %v", err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if string(data) != "0123456789" || err != nil || e.removals() != 1 {
		t.Fatalf("a plain file: %q, %v, %d removals; want its bytes and the helper removed", data, err, e.removals())
	}
}

// An engine that does not answer a stat or the archive request within one
// control call's bound is hung: transient, not a hang and not a fallback
// (the keeper would only wait on the same engine).
func TestStoreArchiveBoundsTheEnginesAnswer(t *testing.T) {
	hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	afterHeader := func(w http.ResponseWriter, r *http.Request) {
		setStatHeader(w, fakeFile)
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	for name, e := range map[string]*fakeArchiveEngine{
		"no stat":       {statHang: true},
		"no archive":    {stats: map[string]container.PathStat{"/v/f": fakeFile}, archive: hang},
		"no tar header": {stats: map[string]container.PathStat{"/v/f": fakeFile}, archive: afterHeader},
	} {
		p := e.provider(t)
		start := time.Now()
		_, err := p.readFileArchive(testCtx(t), fakeHelperID, "f")
		t.Logf("%s: %v after %s", name, err, time.Since(start).Round(time.Millisecond))
		if protocol.KindOf(err) != protocol.KindTransient || !errors.Is(err, errEngineTimeout) {
			t.Errorf("%s: %v (kind %s); want transient, the engine did not answer", name, err, protocol.KindOf(err))
		}
	}
}
