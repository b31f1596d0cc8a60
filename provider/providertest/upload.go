package providertest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// failingReader gives n bytes of data, then fails.
type failingReader struct {
	r io.Reader
}

var errSourceBroke = errors.New("the host's stream broke")

func (f *failingReader) Read(b []byte) (int, error) {
	n, err := f.r.Read(b)
	if errors.Is(err, io.EOF) {
		return n, errSourceBroke
	}
	return n, err
}

// stallingReader gives its data, then blocks until ctx ends; started is
// closed once the data is gone.
type stallingReader struct {
	r       io.Reader
	ctx     context.Context
	started chan struct{}
}

func (s *stallingReader) Read(b []byte) (int, error) {
	n, err := s.r.Read(b)
	if errors.Is(err, io.EOF) {
		close(s.started)
		<-s.ctx.Done()
		return 0, s.ctx.Err()
	}
	return n, err
}

// sizedReader is an upload whose size the host announced.
type sizedReader struct {
	r    io.Reader
	size int64
}

func (s *sizedReader) Read(b []byte) (int, error) { return s.r.Read(b) }
func (s *sizedReader) UploadSize() int64          { return s.size }

var _ provider.SizedUpload = (*sizedReader)(nil)

func runUpload(t *testing.T, h Harness) {
	e := newEnv(t, h)
	sw, ok := e.p.(provider.StreamWriter)
	if !ok || !e.p.Info().Capabilities.Upload {
		t.Skip("provider takes no streamed uploads")
	}
	files, _ := e.p.(provider.SandboxFiles)
	id := e.create(protocol.Spec{}, nil)
	readBack := func(t *testing.T, path string) []byte {
		t.Helper()
		if files == nil {
			return []byte(e.sh(id, "/", "cat "+path))
		}
		got, err := readSandboxFile(t, files, id, path)
		if err != nil {
			t.Fatalf("read back %s: %v", path, err)
		}
		return got
	}

	t.Run("large_file_whole_with_its_mode", func(t *testing.T) {
		data := pattern(24<<20 + 123) // several frames, buffers and pipes' worth
		n, err := sw.WriteFileFrom(ctx(t), id, "/up/large.bin", perm(0o640), bytes.NewReader(data))
		if err != nil || n != int64(len(data)) {
			t.Fatalf("upload: %d bytes, %v", n, err)
		}
		sameBytes(t, "large.bin", readBack(t, "up/large.bin"), data)
		if got := e.sh(id, "/", "stat -c %a up/large.bin"); got != "640\n" {
			t.Errorf("mode %q, want 640", got)
		}
		noTemporaryFiles(t, e, id, "up")
	})

	// An upload whose size the host announced (provider.SizedUpload): a
	// provider may take another path for it (Docker: the engine's archive
	// endpoint), with the same file, mode, atomicity and refusals.
	t.Run("sized_upload", func(t *testing.T) {
		data := pattern(3<<20 + 77)
		n, err := sw.WriteFileFrom(ctx(t), id, "/up/sized.bin", perm(0o604), &sizedReader{r: bytes.NewReader(data), size: int64(len(data))})
		if err != nil || n != int64(len(data)) {
			t.Fatalf("sized upload: %d bytes, %v", n, err)
		}
		sameBytes(t, "sized.bin", readBack(t, "up/sized.bin"), data)
		if got := e.sh(id, "/", "stat -c %a up/sized.bin"); got != "604\n" {
			t.Errorf("mode %q, want 604", got)
		}
		_, err = sw.WriteFileFrom(ctx(t), id, "/up/sized.bin", nil, &sizedReader{r: &failingReader{r: bytes.NewReader(data[:2<<20])}, size: int64(len(data))})
		if err == nil {
			t.Fatal("a sized upload whose stream broke succeeded")
		}
		sameBytes(t, "sized.bin after a broken upload", readBack(t, "up/sized.bin"), data)
		// Larger than every buffer between the two ends: a provider must
		// take the refusal while the data is still going out.
		over := pattern(48 << 20)
		_, err = sw.WriteFileFrom(ctx(t), id, "/up", nil, &sizedReader{r: bytes.NewReader(over), size: int64(len(over))})
		wantReason(t, "a sized upload over a directory", err, protocol.ReasonIsDirectory)
		noTemporaryFiles(t, e, id, "up")
	})

	t.Run("empty_file", func(t *testing.T) {
		if n, err := sw.WriteFileFrom(ctx(t), id, "empty", nil, strings.NewReader("")); err != nil || n != 0 {
			t.Fatalf("empty upload: %d, %v", n, err)
		}
		if got := e.sh(id, "/", "wc -c < empty"); strings.TrimSpace(got) != "0" {
			t.Fatalf("empty file holds %q bytes", got)
		}
	})

	t.Run("a_broken_stream_leaves_the_old_file", func(t *testing.T) {
		e.sh(id, "/", "mkdir -p keep && printf old > keep/f && chmod 604 keep/f")
		_, err := sw.WriteFileFrom(ctx(t), id, "keep/f", nil, &failingReader{r: bytes.NewReader(pattern(3 << 20))})
		if err == nil {
			t.Fatal("an upload whose stream broke succeeded")
		}
		if got := string(readBack(t, "keep/f")); got != "old" {
			t.Fatalf("keep/f holds %d bytes after a broken upload, want the old file", len(got))
		}
		if got := e.sh(id, "/", "stat -c %a keep/f"); got != "604\n" {
			t.Errorf("mode %q after a broken upload, want 604", got)
		}
		noTemporaryFiles(t, e, id, "keep")
	})

	t.Run("a_cancelled_upload_leaves_nothing", func(t *testing.T) {
		c, cancel := context.WithCancel(ctx(t))
		src := &stallingReader{r: bytes.NewReader(pattern(1 << 20)), ctx: c, started: make(chan struct{})}
		done := make(chan error, 1)
		go func() {
			_, err := sw.WriteFileFrom(c, id, "gone/new.bin", nil, src)
			done <- err
		}()
		<-src.started
		cancel()
		if err := <-done; err == nil {
			t.Fatal("a cancelled upload succeeded")
		}
		if e.canDo(id, "test -e gone/new.bin") {
			t.Fatal("a cancelled upload left its file")
		}
		noTemporaryFiles(t, e, id, "gone")
	})

	t.Run("keeps_an_existing_mode_and_honours_permissions", func(t *testing.T) {
		e.sh(id, "/", "printf v1 > m.sh && chmod 751 m.sh")
		if _, err := sw.WriteFileFrom(ctx(t), id, "m.sh", nil, strings.NewReader("v2")); err != nil {
			t.Fatal(err)
		}
		if got, m := string(readBack(t, "m.sh")), e.sh(id, "/", "stat -c %a m.sh"); got != "v2" || m != "751\n" {
			t.Fatalf("overwrite without a mode: %q mode %q", got, m)
		}
		e.sh(id, "/", "printf old > ro.txt && chmod 444 ro.txt")
		_, err := sw.WriteFileFrom(ctx(t), id, "ro.txt", nil, strings.NewReader("new"))
		if e.canDo(id, ": >> ro.txt") {
			if err != nil {
				t.Fatalf("upload over a file the user may write: %v", err)
			}
			return
		}
		wantReason(t, "upload over a read-only file", err, protocol.ReasonPermissionDenied)
		if got := string(readBack(t, "ro.txt")); got != "old" {
			t.Fatalf("a refused upload changed ro.txt: %q", got)
		}
	})

	t.Run("directories_are_refused", func(t *testing.T) {
		e.sh(id, "/", "mkdir -p adir")
		_, err := sw.WriteFileFrom(ctx(t), id, "adir", nil, strings.NewReader("x"))
		wantReason(t, "upload onto a directory", err, protocol.ReasonIsDirectory)
	})
}

func runVolumeAdmin(t *testing.T, h Harness) {
	e := newEnv(t, h)
	admin, ok := e.p.(provider.VolumeAdmin)
	st, hasStore := e.p.(provider.Store)
	if !ok || !hasStore || !e.p.Info().Capabilities.VolumeAdmin {
		t.Skip("provider cannot create or delete volumes")
	}
	vol := uniqueName("made")
	if err := admin.CreateVolume(ctx(t), e.owner, vol); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.DeleteVolume(context.Background(), e.owner, vol) })
	vols, err := st.ListVolumes(ctx(t), e.owner)
	if err != nil || !hasVolume(vols, vol) {
		t.Fatalf("ListVolumes after create: %v %v", vols, err)
	}
	entries, _, err := st.ListDir(ctx(t), e.owner, vol, "", 10)
	if err != nil || len(entries) != 0 {
		t.Fatalf("a new volume: %v, %v", entries, err)
	}
	other := provider.Owner{Key: OwnerKey, InstallID: uniqueName("other")}
	wantReason(t, "create of an existing volume", admin.CreateVolume(ctx(t), e.owner, vol), protocol.ReasonExists)
	wantReason(t, "create of another install's volume", admin.CreateVolume(ctx(t), other, vol), protocol.ReasonExists)
	wantKind(t, "delete of another install's volume", admin.DeleteVolume(ctx(t), other, vol), protocol.KindNotFound)

	box := e.create(protocol.Spec{Volumes: []protocol.VolumeMount{{Name: vol, Path: "/data"}}}, nil)
	wantKind(t, "delete of a mounted volume", admin.DeleteVolume(ctx(t), e.owner, vol), protocol.KindConflict)
	if _, err := e.p.Terminate(ctx(t), box); err != nil {
		t.Fatal(err)
	}
	if err := admin.DeleteVolume(ctx(t), e.owner, vol); err != nil {
		t.Fatalf("delete once its sandbox is gone: %v", err)
	}
	if vols, _ := st.ListVolumes(ctx(t), e.owner); hasVolume(vols, vol) {
		t.Fatal("a deleted volume is still listed")
	}
	wantKind(t, "delete of a deleted volume", admin.DeleteVolume(ctx(t), e.owner, vol), protocol.KindNotFound)
}
