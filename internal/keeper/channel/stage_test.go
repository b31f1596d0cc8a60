package channel

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// StatFile opens as the user and says what it opened: the path with no
// symlink on it, the owner, mode, size and time; its refusals are
// ReadFile's.
func TestStatFile(t *testing.T) {
	c, _ := openStdio(t)
	if !c.Supports(keeperproto.FeatureFileStage) {
		t.Fatal("the keeper does not announce file_stage")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("hello"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	info, err := c.StatFile(ctx(t), filepath.Join(dir, "link"), "")
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(file)
	if info.Path != file || info.Size != 5 || info.Mode != 0o640 || info.UID != os.Geteuid() || info.MtimeNS != fi.ModTime().UnixNano() {
		t.Fatalf("stat: %+v", info)
	}
	// A read says the same of what it opened.
	r, err := c.ReadFile(ctx(t), filepath.Join(dir, "link"), "")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := r.(interface{ Info() (FileInfo, bool) }).Info(); !ok || got != info {
		t.Fatalf("read's info %+v %v, stat's %+v", got, ok, info)
	}
	r.Close()
	if _, err := c.StatFile(ctx(t), filepath.Join(dir, "missing"), ""); reasonOf(t, err) != ReasonNoSuchFile {
		t.Fatalf("missing: %v", err)
	}
	if _, err := c.StatFile(ctx(t), dir, ""); reasonOf(t, err) != ReasonIsDirectory {
		t.Fatalf("directory: %v", err)
	}
	if _, err := c.StatFile(ctx(t), file, "65534"); reasonOf(t, err) != ReasonPermissionDenied {
		t.Fatalf("as a user: %v", err)
	}
}

// A staged write: the keeper makes the staging directory as the user, the
// caller puts the file in, and a commit renames it over the target once it
// is what the caller says; anything else leaves the target as it was and
// nothing beside it.
func TestStagedWrite(t *testing.T) {
	c, _ := openStdio(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "sub", "f")
	mode := uint32(0o600)
	put := func(s *Stage, data []byte) {
		t.Helper()
		if err := os.WriteFile(s.StagedPath(), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	onlyTarget := func() {
		t.Helper()
		left, _ := os.ReadDir(filepath.Dir(target))
		if len(left) != 1 || left[0].Name() != "f" {
			t.Fatalf("beside the target: %v", left)
		}
	}
	s, err := c.StageFile(ctx(t), target, &mode, "")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(s.Path) != filepath.Dir(target) || !strings.HasPrefix(filepath.Base(s.Path), ".resident-upload-") || s.Mode != 0o600 || s.UID != os.Geteuid() {
		t.Fatalf("stage: %+v", s.FileInfo)
	}
	put(s, []byte("first"))
	if err := s.Commit(5); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != "first" {
		t.Fatalf("committed: %q", got)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	onlyTarget()

	// The staged file is not what was announced: refused, target kept.
	s, err = c.StageFile(ctx(t), target, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	put(s, []byte("second, longer"))
	if err := s.Commit(3); err == nil || !strings.Contains(err.Error(), "has 14 bytes, not 3") {
		t.Fatalf("wrong size committed: %v", err)
	}
	// Nothing staged at all.
	s, err = c.StageFile(ctx(t), target, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var fe *FileError
	if err := s.Commit(3); !errors.As(err, &fe) {
		t.Fatalf("missing staged file committed: %v", err)
	}
	// Aborted.
	s, err = c.StageFile(ctx(t), target, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	put(s, bytes.Repeat([]byte("x"), 1000))
	s.Abort()
	if got, _ := os.ReadFile(target); string(got) != "first" {
		t.Fatalf("target after refusals: %q", got)
	}
	onlyTarget()

	// Refusals are WriteFile's, before any staging directory.
	if _, err := c.StageFile(ctx(t), dir, nil, ""); reasonOf(t, err) != ReasonIsDirectory {
		t.Fatalf("over a directory: %v", err)
	}
	if _, err := c.StageFile(ctx(t), filepath.Join(dir, "theirs"), nil, "65534"); reasonOf(t, err) != ReasonPermissionDenied {
		t.Fatalf("as a user: %v", err)
	}
	if r := run(t, c, ExecSpec{Argv: []string{"true"}}); r.status.Code != 0 {
		t.Fatal("channel broken after the staged writes")
	}
}

func reasonOf(t *testing.T, err error) string {
	t.Helper()
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Fatalf("not a FileError: %v", err)
	}
	return fe.Reason
}
