package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
)

// randomText is n bytes of a seeded random stream.
func randomText(n int) string {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(n), byte(n >> 8), byte(n >> 16)})
	_, _ = r.Read(b)
	return string(b)
}

// helperState is the engine's state of a helper container, "gone" once
// it is removed. It lists rather than inspects: the engine holds a
// container's lock while it streams an archive out of it, and an inspect
// would wait for the stream this test is not reading.
func helperState(t *testing.T, p *Provider, id string) string {
	t.Helper()
	list, err := p.cli.ContainerList(testCtx(t), client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("id", id)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 {
		return "gone"
	}
	return string(list.Items[0].State)
}

// A plain file comes through the archive API of a helper that is never
// started, byte for byte, whatever its size against the tar blocks (512)
// and the resident's read buffer (64 KiB); closing the reader removes the
// helper.
func TestStoreArchiveReadsPlainFiles(t *testing.T) {
	p, _ := newTestProvider(t)
	vol := runID + "-plain"
	files := map[string]string{
		"empty":              "",
		"block":              randomText(512),
		"pump":               randomText(64 << 10),
		"pump+1":             randomText(64<<10 + 1),
		"random":             randomText(8<<20 + 123),
		"deep/er/file.txt":   "nested\n",
		"spaced name ü#?&=%": "odd name",
	}
	seedVolume(t, p, vol, files)
	for name, want := range files {
		for _, asked := range []string{name, "/" + name, "./" + name} {
			rc, err := p.ReadFile(testCtx(t), vol, asked)
			if err != nil {
				t.Fatalf("ReadFile(%q): %v", asked, err)
			}
			af, ok := rc.(*archiveFile)
			if !ok {
				rc.Close()
				t.Fatalf("ReadFile(%q) took the keeper path (%T), want the archive path", asked, rc)
			}
			if st := helperState(t, p, af.helperID); st != "created" {
				t.Errorf("ReadFile(%q): helper is %q while streaming, want created (never started)", asked, st)
			}
			h := sha256.New()
			n, err := io.CopyBuffer(h, rc, make([]byte, 64<<10))
			if err != nil || n != int64(len(want)) || !bytes.Equal(h.Sum(nil), sha256Of(want)) {
				t.Errorf("ReadFile(%q) = %d bytes, %v; want %d bytes, same sha256 (%v)", asked, n, err, len(want), !bytes.Equal(h.Sum(nil), sha256Of(want)))
			}
			if n, err := rc.Read(make([]byte, 10)); n != 0 || err != io.EOF {
				t.Errorf("ReadFile(%q): a Read after the end = %d, %v", asked, n, err)
			}
			rc.Close()
			if st := helperState(t, p, af.helperID); st != "gone" {
				t.Errorf("ReadFile(%q): helper is %q after Close, want gone", asked, st)
			}
		}
	}
}

func sha256Of(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// Every path that is not plain directories ending in a regular file goes
// to the keeper, and the host sees exactly what the keeper alone answers:
// the same bytes, or the same kind and message.
func TestStoreArchiveFallsBackWithTheKeepersAnswers(t *testing.T) {
	p, _ := newTestProvider(t)
	vol := runID + "-fallback"
	seedVolume(t, p, vol, map[string]string{"dir/file": "inside\n", "top": "top\n"})
	id := create(t, p, testOwner(t), protocol.Spec{Volumes: []protocol.VolumeMount{{Name: vol, Path: "/data"}}}, nil)
	sh(t, p, id, "cd /data && ln -s dir dlink && ln -s top flink && ln -s flink chain && ln -s /etc/passwd abs && "+
		"ln -s ../../../../../../etc/passwd climb && ln -s / root && mkfifo fifo && ln -s /dir absdir")
	cases := []struct {
		path     string
		fast     bool
		wantKind protocol.Kind // "" when the read succeeds
		wantData string
	}{
		{"dir/file", true, "", "inside\n"},
		{"dir//file/", true, "", "inside\n"},
		{"dlink/file", false, "", "inside\n"}, // a directory symlink on the way
		{"flink", false, "", "top\n"},         // the last component a symlink
		{"chain", false, "", "top\n"},
		{"absdir/file", false, protocol.KindInvalidRequest, ""}, // an absolute link os.Root refuses
		{"abs", false, protocol.KindInvalidRequest, ""},
		{"climb", false, protocol.KindInvalidRequest, ""},
		{"root/etc/passwd", false, protocol.KindInvalidRequest, ""},
		{"dir", false, protocol.KindInvalidRequest, ""},
		{"", false, protocol.KindInvalidRequest, ""},
		{"/", false, protocol.KindInvalidRequest, ""},
		{"fifo", false, protocol.KindInvalidRequest, ""},
		{"missing", false, protocol.KindNotFound, ""},
		{"dir/missing", false, protocol.KindNotFound, ""},
		{"top/below", false, protocol.KindNotFound, ""},
	}
	for _, c := range cases {
		gotData, gotErr, fast := readVia(t, func() (io.ReadCloser, error) { return p.ReadFile(testCtx(t), vol, c.path) })
		keeperData, keeperErr, _ := readVia(t, func() (io.ReadCloser, error) {
			hid, err := p.createStoreHelper(testCtx(t), vol, c.path, "cat", "--", c.path)
			if err != nil {
				return nil, err
			}
			return p.readFileKeeper(testCtx(t), hid, vol, c.path)
		})
		if fast != c.fast {
			t.Errorf("%q: archive path taken = %v, want %v", c.path, fast, c.fast)
		}
		if gotData != keeperData || errText(gotErr) != errText(keeperErr) || protocol.KindOf(gotErr) != protocol.KindOf(keeperErr) {
			t.Errorf("%q: ReadFile = %q, %v (%s); the keeper alone = %q, %v (%s)", c.path, gotData, gotErr, protocol.KindOf(gotErr), keeperData, keeperErr, protocol.KindOf(keeperErr))
		}
		if k := protocol.KindOf(gotErr); k != c.wantKind && !(c.wantKind == "" && gotErr == nil) || gotData != c.wantData {
			t.Errorf("%q: ReadFile = %q, %v (%s); want %q, kind %q", c.path, gotData, gotErr, k, c.wantData, c.wantKind)
		}
	}
}

// readVia reads a whole file, and says whether it came by the archive path.
func readVia(t *testing.T, open func() (io.ReadCloser, error)) (string, error, bool) {
	t.Helper()
	rc, err := open()
	if err != nil {
		return "", err, false
	}
	defer rc.Close()
	_, fast := rc.(*archiveFile)
	data, err := io.ReadAll(rc)
	return string(data), err, fast
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// The request's end (the host's $/cancelRequest) in the middle of a read
// ends the stream and removes the helper; so does closing the reader early.
func TestStoreArchiveCancelAndCloseRemoveTheHelper(t *testing.T) {
	p, _ := newTestProvider(t)
	vol := runID + "-cancel"
	const size = 24 << 20
	seedVolume(t, p, vol, map[string]string{"big": randomText(size)})

	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	rc, err := p.ReadFile(ctx, vol, "big")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	af, ok := rc.(*archiveFile)
	if !ok {
		t.Fatalf("took the keeper path (%T)", rc)
	}
	if _, err := io.ReadFull(rc, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	cancel()
	awaitHelperGone(t, p, af.helperID)
	n, err := io.Copy(io.Discard, rc)
	if err == nil || n+4096 >= size {
		t.Fatalf("after the cancel the read went on: %d more bytes, %v", n, err)
	}

	rc, err = p.ReadFile(testCtx(t), vol, "big")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(rc, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if st := helperState(t, p, rc.(*archiveFile).helperID); st != "gone" {
		t.Fatalf("helper is %q after an early Close", st)
	}
}

// awaitHelperGone waits until the engine no longer has the container.
func awaitHelperGone(t *testing.T, p *Provider, id string) {
	t.Helper()
	for range 300 {
		if helperState(t, p, id) == "gone" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("helper %s still there 30s after its read ended", id[:12])
}

// An engine that freezes mid-read: the request's end still ends the read,
// and the helper goes once the engine moves again.
func TestStoreArchiveFrozenEngineMidRead(t *testing.T) {
	needEngine(t)
	px := startProxy(t)
	p, _ := newTestProvider(t, px.host())
	p.timing.api = 5 * time.Second
	vol := runID + "-archfrozen"
	seedVolume(t, p, vol, map[string]string{"big": randomText(24 << 20)})

	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	rc, err := p.ReadFile(ctx, vol, "big")
	if err != nil {
		t.Fatal(err)
	}
	af, ok := rc.(*archiveFile)
	if !ok {
		rc.Close()
		t.Fatalf("took the keeper path (%T)", rc)
	}
	if _, err := io.ReadFull(rc, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	px.setFrozen(true)
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, rc)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a cut read reported success")
		}
	case <-time.After(20 * time.Second):
		px.setFrozen(false)
		t.Fatal("the read still blocks 20s after its request ended, on a frozen engine")
	}
	px.setFrozen(false)
	rc.Close()
	awaitHelperGone(t, p, af.helperID)
}

// What the comment in storearchive.go relies on: a created, never-started helper has no hosts,
// resolv.conf or hostname of the host or of the engine in its root, only
// the empty files every container gets.
func TestStoreArchiveHelperRootHoldsNothingOfTheHost(t *testing.T) {
	p, _ := newTestProvider(t)
	vol := runID + "-root"
	seedVolume(t, p, vol, map[string]string{"f": "x"})
	id, err := p.createStoreHelper(testCtx(t), vol, "f", "cat", "--", "f")
	if err != nil {
		t.Fatal(err)
	}
	defer p.removeHelper(id)
	c, err := p.cli.ContainerInspect(testCtx(t), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Container.HostsPath != "" || c.Container.ResolvConfPath != "" || c.Container.HostnamePath != "" {
		t.Errorf("a created helper has network files of its own: %q %q %q", c.Container.HostsPath, c.Container.ResolvConfPath, c.Container.HostnamePath)
	}
	for _, f := range []string{"/etc/hosts", "/etc/resolv.conf", "/etc/hostname", "/.dockerenv", "/dev/console"} {
		st, err := p.cli.ContainerStatPath(testCtx(t), id, client.ContainerStatPathOptions{Path: f})
		if err == nil && st.Stat.Size != 0 {
			t.Errorf("%s in a created helper holds %d bytes", f, st.Stat.Size)
		}
	}
	if st := helperState(t, p, id); st != "created" {
		t.Errorf("helper is %q", st)
	}
}

// The archive's tar header announces the size: a stream that ends short is
// transient, and nothing after the file is ever passed on, whatever the
// reads' sizes.
func TestArchiveFileChecksWhatTheEngineSent(t *testing.T) {
	file := tarFile("f", []byte("0123456789"), 0o644)
	cases := []struct {
		name     string
		archive  []byte
		wantData string
		wantKind protocol.Kind
	}{
		{"one file", tarOf(file), "0123456789", ""},
		{"no trailer", tarOf(file)[:1024], "0123456789", ""},
		{"a second entry", tarOf(file, tarFile("g", []byte("SECRET"), 0o644)), "0123456789", protocol.KindInternal},
		{"cut in the file", tarOf(file)[:512+4], "0123", protocol.KindTransient},
		{"cut after the header", tarOf(file)[:512], "", protocol.KindTransient},
	}
	for _, c := range cases {
		for _, chunk := range []int{1, 3, 64 << 10} {
			f := &archiveFile{tar: tarReaderAtEntry(t, c.archive), left: 10, close: func() {}}
			var got bytes.Buffer
			_, err := io.CopyBuffer(&got, struct{ io.Reader }{f}, make([]byte, chunk))
			if got.String() != c.wantData || protocol.KindOf(err) != c.wantKind && !(c.wantKind == "" && err == nil) {
				t.Errorf("%s, %d-byte reads: %q, %v (%s); want %q, kind %q", c.name, chunk, got.String(), err, protocol.KindOf(err), c.wantData, c.wantKind)
			}
		}
	}
}

func tarReaderAtEntry(t *testing.T, archive []byte) *tar.Reader {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(archive))
	if _, err := tr.Next(); err != nil {
		t.Fatal(err)
	}
	return tr
}

// A file that changed between the walk and the read (here: a walk result
// one nanosecond off) goes to the keeper in the same helper, whose archive
// stream, opened and abandoned, must not hold the container: the engine
// locks it while it streams.
func TestStoreArchiveAbandonedStreamLetsTheKeeperStart(t *testing.T) {
	p, _ := newTestProvider(t)
	vol := runID + "-changed"
	data := randomText(24 << 20)
	seedVolume(t, p, vol, map[string]string{"big": data})
	id, err := p.createStoreHelper(testCtx(t), vol, "big", "cat", "--", "big")
	if err != nil {
		t.Fatal(err)
	}
	want, err := p.walkPlain(testCtx(t), id, "big")
	if err != nil {
		p.removeHelper(id)
		t.Fatal(err)
	}
	want.Mtime = want.Mtime.Add(time.Nanosecond)
	if _, err := p.openArchive(testCtx(t), id, "big", want); !errors.Is(err, errUseKeeper) {
		p.removeHelper(id)
		t.Fatalf("a changed file: %v, want errUseKeeper", err)
	}
	got, err, fast := readVia(t, func() (io.ReadCloser, error) { return p.readFileKeeper(testCtx(t), id, vol, "big") })
	if err != nil || fast || got != data {
		t.Fatalf("the keeper after an abandoned archive: %d bytes, %v, archive path %v", len(got), err, fast)
	}
	awaitHelperGone(t, p, id)
}
