package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// sizedBytes is an upload whose size is announced, as the resident's is
// when the host gives one.
type sizedBytes struct {
	*bytes.Reader
	size int64
}

func (s sizedBytes) UploadSize() int64 { return s.size }

func announced(data []byte, size int) sizedBytes {
	return sizedBytes{bytes.NewReader(data), int64(size)}
}

func readAll(t *testing.T, p *Provider, id, path string) []byte {
	t.Helper()
	rc, err := p.ReadSandboxFile(testCtx(t), id, path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return b
}

func sumOf(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// Big files on the root filesystem go through the engine's archive
// endpoint, checked by the keeper as the user; everything else (small
// files, a volume, a user's write) takes the channel, with the same bytes
// and the same errors.
func TestArchiveFiles(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	ctx := testCtx(t)
	sh(t, p, id, "head -c 3000000 /dev/urandom > /tmp/big && chmod 640 /tmp/big && ln -s /tmp/big /tmp/link && echo small > /tmp/small")
	want := strings.Fields(sh(t, p, id, "sha256sum /tmp/big"))[0]

	reads := p.archiveReads.Load()
	if got := readAll(t, p, id, "/tmp/big"); len(got) != 3000000 || sumOf(got) != want {
		t.Fatalf("archive read: %d bytes, sum %s", len(got), sumOf(got))
	}
	if got := readAll(t, p, id, "/tmp/link"); sumOf(got) != want {
		t.Fatal("archive read through a symlink: other bytes")
	}
	if n := p.archiveReads.Load() - reads; n != 2 {
		t.Fatalf("%d of 2 big reads took the archive", n)
	}
	if got := readAll(t, p, id, "/tmp/small"); string(got) != "small\n" || p.archiveReads.Load()-reads != 2 {
		t.Fatalf("small read %q; archive reads %d", got, p.archiveReads.Load()-reads)
	}
	if _, err := p.ReadSandboxFile(ctx, id, "/tmp/missing"); reasonOf(err) != protocol.ReasonNoSuchFile {
		t.Fatalf("missing file: %v", err)
	}

	data := pattern(2 << 20)
	writes := p.archiveWrites.Load()
	n, err := p.WriteFileFrom(ctx, id, "/tmp/up/f.bin", perm(0o600), announced(data, len(data)))
	if err != nil || n != int64(len(data)) {
		t.Fatalf("archive write: %d, %v", n, err)
	}
	if p.archiveWrites.Load()-writes != 1 {
		t.Fatal("a sized write of 2 MiB did not take the archive")
	}
	if got := sh(t, p, id, "stat -c '%a %u %g %s' /tmp/up/f.bin; sha256sum < /tmp/up/f.bin; ls -A /tmp/up"); got != "600 0 0 2097152\n"+sumOf(data)+"  -\nf.bin\n" {
		t.Fatalf("archive-written file: %q", got)
	}
	// Replacing keeps the file's mode when none is given.
	if _, err := p.WriteFileFrom(ctx, id, "/tmp/up/f.bin", nil, announced(data[:1<<20], 1<<20)); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, p, id, "stat -c '%a %s' /tmp/up/f.bin"); got != "600 1048576\n" {
		t.Fatalf("replaced: %q", got)
	}
	// Refusals are the channel's, before any byte.
	if _, err := p.WriteFileFrom(ctx, id, "/tmp/up", nil, announced(data, len(data))); reasonOf(err) != protocol.ReasonIsDirectory {
		t.Fatalf("over a directory: %v", err)
	}
	if _, err := p.WriteFileFrom(ctx, id, "/tmp/up/f.bin/below", nil, announced(data, len(data))); reasonOf(err) != protocol.ReasonNotDirectory {
		t.Fatalf("below a file: %v", err)
	}
	// A source shorter or longer than announced, or failing: refused, and
	// nothing is left (the old file stays).
	for name, src := range map[string]io.Reader{
		"short":   announced(data[:1500000], len(data)),
		"long":    announced(data, 1500000),
		"failing": sizedFailing{r: bytes.NewReader(data[:1500000]), size: int64(len(data))},
	} {
		if _, err := p.WriteFileFrom(ctx, id, "/tmp/up/f.bin", nil, src); err == nil {
			t.Fatalf("%s upload: no error", name)
		} else if name != "failing" && protocol.KindOf(err) != protocol.KindInvalidRequest {
			t.Fatalf("%s upload: %v", name, err)
		}
		if got := sh(t, p, id, "stat -c %s /tmp/up/f.bin; ls -A /tmp/up"); got != "1048576\nf.bin\n" {
			t.Fatalf("after the %s upload: %q", name, got)
		}
	}
	if p.archiveReads.Load()-reads != 2 || p.archiveWrites.Load()-writes != 5 {
		t.Fatalf("archive reads %d, writes %d", p.archiveReads.Load()-reads, p.archiveWrites.Load()-writes)
	}

	// An upload that lends its buffers (the resident's) is written from
	// them as they are, and one of ours scribbles over its buffer after
	// each Write: a writer on the way that kept a slice would write
	// other bytes. Its refusals are a read upload's.
	writes = p.archiveWrites.Load()
	if n, err := p.WriteFileFrom(ctx, id, "/tmp/up/lent.bin", nil, lending(data, len(data), false)); err != nil || n != int64(len(data)) {
		t.Fatalf("lent archive write: %d, %v", n, err)
	}
	if got := sh(t, p, id, "sha256sum < /tmp/up/lent.bin"); got != sumOf(data)+"  -\n" {
		t.Fatalf("lent upload: other bytes (%q)", got)
	}
	for name, src := range map[string]io.Reader{
		"short":   lending(data[:1500000], len(data), false),
		"long":    lending(data, 1500000, false),
		"failing": lending(data[:1500000], len(data), true),
	} {
		if _, err := p.WriteFileFrom(ctx, id, "/tmp/up/lent.bin", nil, src); err == nil {
			t.Fatalf("%s lent upload: no error", name)
		} else if name != "failing" && protocol.KindOf(err) != protocol.KindInvalidRequest {
			t.Fatalf("%s lent upload: %v", name, err)
		}
		if got := sh(t, p, id, "sha256sum < /tmp/up/lent.bin; ls -A /tmp/up"); got != sumOf(data)+"  -\nf.bin\nlent.bin\n" {
			t.Fatalf("after the %s lent upload: %q", name, got)
		}
	}
	if p.archiveWrites.Load()-writes != 4 {
		t.Fatalf("lent archive writes %d, want 4", p.archiveWrites.Load()-writes)
	}

	// As a user: reads through the archive, checked as the user first;
	// writes on the channel.
	nb := create(t, p, testOwner(t), protocol.Spec{User: "nobody"}, nil)
	sh(t, p, nb, "head -c 2000000 /dev/zero > /tmp/nb.bin")
	r := run(t, testCtx(t), p, nb, provider.ExecRequest{Argv: []string{"sh", "-c", "head -c 2000000 /dev/zero > /tmp/root.bin && chmod 600 /tmp/root.bin"}, User: "root"})
	if r.status.Code != 0 {
		t.Fatalf("as root: %+v %s", r.status, r.stderr)
	}
	reads, writes = p.archiveReads.Load(), p.archiveWrites.Load()
	if got := readAll(t, p, nb, "/tmp/nb.bin"); len(got) != 2000000 {
		t.Fatalf("user's read: %d bytes", len(got))
	}
	if _, err := p.ReadSandboxFile(ctx, nb, "/tmp/root.bin"); reasonOf(err) != protocol.ReasonPermissionDenied {
		t.Fatalf("root's file read as nobody: %v", err)
	}
	if _, err := p.WriteFileFrom(ctx, nb, "/tmp/nb-up.bin", nil, announced(data, len(data))); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, p, nb, "stat -c '%u %s' /tmp/nb-up.bin"); got != "65534 2097152\n" {
		t.Fatalf("user's upload: %q", got)
	}
	if p.archiveReads.Load()-reads != 1 || p.archiveWrites.Load()-writes != 0 {
		t.Fatalf("as a user: archive reads %d (want 1), writes %d (want 0)", p.archiveReads.Load()-reads, p.archiveWrites.Load()-writes)
	}
}

// The archive upload's own refusals are the engine's words, as transient:
// a staging directory gone is not a missing sandbox.
func TestPutArchiveRefused(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	err := p.putArchive(testCtx(t), id, "/no/such/dir", bytes.NewReader(make([]byte, 1024)))
	if protocol.KindOf(err) != protocol.KindTransient || !strings.Contains(err.Error(), "archive upload") {
		t.Fatalf("PUT into a missing directory: %v", err)
	}
	// A good one lands.
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	must(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "put.txt", Size: 3, Mode: 0o644}))
	_, _ = tw.Write([]byte("put"))
	must(t, tw.Close())
	must(t, p.putArchive(testCtx(t), id, "/tmp", &tb))
	if got := sh(t, p, id, "cat /tmp/put.txt"); got != "put" {
		t.Fatalf("put.txt: %q", got)
	}
}

// A read-only root: its writable places are volumes, which the archive
// does not take; everything goes on the channel, with the same answers.
func TestArchiveFilesReadOnlyRoot(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{ReadOnlyRoot: true}, nil)
	ctx := testCtx(t)
	data := pattern(2 << 20)
	if _, err := p.WriteFileFrom(ctx, id, "/tmp/f.bin", nil, announced(data, len(data))); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, p, id, "/tmp/f.bin"); !bytes.Equal(got, data) {
		t.Fatal("read back other bytes")
	}
	if _, err := p.WriteFileFrom(ctx, id, "/etc/f.bin", nil, announced(data, len(data))); reasonOf(err) != protocol.ReasonPermissionDenied {
		t.Fatalf("write on the read-only root: %v", err)
	}
	if p.archiveReads.Load() != 0 || p.archiveWrites.Load() != 0 {
		t.Fatalf("archive reads %d, writes %d on a read-only root", p.archiveReads.Load(), p.archiveWrites.Load())
	}
}

// files=channel keeps every byte on the channel.
func TestArchiveFilesOff(t *testing.T) {
	p, _ := newTestProviderWith(t, func(cfg *provider.Config) {
		cfg.Options = provider.NewOptions(map[string]string{OptFiles.Name: filesChannel})
	})
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	data := pattern(2 << 20)
	if _, err := p.WriteFileFrom(testCtx(t), id, "/tmp/f.bin", nil, announced(data, len(data))); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, p, id, "/tmp/f.bin"); !bytes.Equal(got, data) {
		t.Fatal("read back other bytes")
	}
	if p.archiveReads.Load() != 0 || p.archiveWrites.Load() != 0 {
		t.Fatal("files=channel took the archive")
	}
	if _, err := newProvider(provider.Config{Options: provider.NewOptions(map[string]string{OptFiles.Name: "tar"})}); protocol.KindOf(err) != protocol.KindInvalidRequest {
		t.Fatalf("files=tar: %v", err)
	}
}

// The archive's entry must be the file the keeper opened, or the read
// takes the channel.
func TestSameFile(t *testing.T) {
	mtime := time.Unix(1700000000, 123456789)
	info := channel.FileInfo{Path: "/f", Mode: 0o640, UID: 1, GID: 2, Size: 10, MtimeNS: mtime.UnixNano(), OnRoot: true}
	good := tar.Header{Typeflag: tar.TypeReg, Size: 10, Mode: 0o640, Uid: 1, Gid: 2, ModTime: mtime.Truncate(time.Second)}
	if !sameFile(&good, info) {
		t.Fatal("the same file refused")
	}
	for name, change := range map[string]func(*tar.Header){
		"symlink": func(h *tar.Header) { h.Typeflag = tar.TypeSymlink },
		"size":    func(h *tar.Header) { h.Size = 11 },
		"mode":    func(h *tar.Header) { h.Mode = 0o600 },
		"owner":   func(h *tar.Header) { h.Uid = 0 },
		"group":   func(h *tar.Header) { h.Gid = 0 },
		"time":    func(h *tar.Header) { h.ModTime = h.ModTime.Add(time.Second) },
	} {
		h := good
		change(&h)
		if sameFile(&h, info) {
			t.Errorf("another %s taken for the file", name)
		}
	}
}

// sizedLender is a sized upload that lends its buffer (as the resident's
// does), 256 KiB at a time, and scribbles over it after each Write; fail
// makes its end a failure.
type sizedLender struct {
	r    io.Reader
	size int64
	fail bool
}

func lending(data []byte, size int, fail bool) *sizedLender {
	return &sizedLender{r: bytes.NewReader(data), size: int64(size), fail: fail}
}

func (s *sizedLender) UploadSize() int64          { return s.size }
func (s *sizedLender) Read(b []byte) (int, error) { return s.r.Read(b) }
func (s *sizedLender) LendTo(w io.Writer) (int64, error) {
	buf := make([]byte, 256<<10)
	var total int64
	for {
		n, err := s.r.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			for i := range buf {
				buf[i] = 0xee
			}
			if werr != nil {
				return total, werr
			}
		}
		if errors.Is(err, io.EOF) {
			if s.fail {
				return total, io.ErrUnexpectedEOF
			}
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

var _ provider.LentUpload = (*sizedLender)(nil)

type sizedFailing struct {
	r    io.Reader
	size int64
}

func (s sizedFailing) UploadSize() int64 { return s.size }
func (s sizedFailing) Read(b []byte) (int, error) {
	n, err := s.r.Read(b)
	if errors.Is(err, io.EOF) {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

func reasonOf(err error) protocol.Reason {
	r, _ := protocol.ReasonOf(err)
	return r
}

// pattern is n bytes that are not all alike.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*131 + i>>9)
	}
	return b
}

// A cancelled archive upload leaves nothing, the old file as it was, and
// answers the cancel: the body is cut short cleanly, so the engine has
// stopped writing when the keeper removes the staging directory.
func TestArchiveUploadCancelled(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	sh(t, p, id, "mkdir -p /tmp/c && printf old > /tmp/c/f")
	data := pattern(3 << 20)
	ctx, cancel := context.WithCancel(testCtx(t))
	src := &stallingSized{r: bytes.NewReader(data[:2<<20]), ctx: ctx, size: int64(len(data)), started: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := p.WriteFileFrom(ctx, id, "/tmp/c/f", nil, src)
		done <- err
	}()
	<-src.started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled upload: %v", err)
	}
	if p.archiveWrites.Load() != 1 {
		t.Fatal("the sized upload did not take the archive")
	}
	if got := sh(t, p, id, "cat /tmp/c/f; echo; ls -A /tmp/c"); got != "old\nf\n" {
		t.Fatalf("after a cancelled upload: %q", got)
	}
}

// stallingSized gives its bytes, then blocks until ctx ends.
type stallingSized struct {
	r       io.Reader
	ctx     context.Context
	size    int64
	started chan struct{}
	once    sync.Once
}

func (s *stallingSized) UploadSize() int64 { return s.size }
func (s *stallingSized) Read(b []byte) (int, error) {
	n, err := s.r.Read(b)
	if errors.Is(err, io.EOF) {
		s.once.Do(func() { close(s.started) })
		<-s.ctx.Done()
		return 0, s.ctx.Err()
	}
	return n, err
}
