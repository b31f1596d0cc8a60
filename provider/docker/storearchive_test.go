package docker

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"testing"

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
			rc, err := p.ReadFile(testCtx(t), testOwner(t), vol, asked)
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
		gotData, gotErr, fast := readVia(t, func() (io.ReadCloser, error) { return p.ReadFile(testCtx(t), testOwner(t), vol, c.path) })
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
