package channel

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReadListFiles(t *testing.T) {
	c, _ := openStdio(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "sub", "f.bin")
	data := bytes.Repeat([]byte("0123456789abcdef"), 200000) // 3.2 MB: many frames, past the window
	if err := c.WriteFile(ctx(t), target, nil, "", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(target)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("written file: %d bytes, %v", len(got), err)
	}
	if info, _ := os.Stat(target); info.Mode().Perm() != 0o644 {
		t.Fatalf("new file mode %v", info.Mode())
	}
	mode := uint32(0o600)
	if err := c.WriteFile(ctx(t), target, &mode, "", strings.NewReader("small")); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(target); info.Mode().Perm() != 0o600 || info.Size() != 5 {
		t.Fatalf("rewritten file %v %d", info.Mode(), info.Size())
	}

	if err := os.WriteFile(target, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := c.ReadFile(ctx(t), target, "")
	if err != nil {
		t.Fatal(err)
	}
	if r.(File).Size() != int64(len(data)) {
		t.Fatalf("announced size %d", r.(File).Size())
	}
	back, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("read back %d bytes, %v", len(back), err)
	}

	for _, name := range []string{"a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entries, truncated, err := c.ListDir(ctx(t), dir, "", 2)
	if err != nil || len(entries) != 2 || !truncated {
		t.Fatalf("list with limit: %v %v %v", entries, truncated, err)
	}
	entries, truncated, err = c.ListDir(ctx(t), dir, "", 100)
	if err != nil || len(entries) != 4 || truncated {
		t.Fatalf("whole list: %v %v %v", entries, truncated, err)
	}
	for _, e := range entries {
		if e.Name == "sub" && e.Type != "dir" {
			t.Fatalf("sub listed as %q", e.Type)
		}
	}
}

func TestFileErrorReasons(t *testing.T) {
	c, _ := openStdio(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	reason := func(err error) string {
		var fe *FileError
		if !errors.As(err, &fe) {
			t.Fatalf("not a FileError: %v", err)
		}
		return fe.Reason
	}
	_, err := c.ReadFile(ctx(t), filepath.Join(dir, "missing"), "")
	if r := reason(err); r != ReasonNoSuchFile {
		t.Fatalf("missing: %q (%v)", r, err)
	}
	if _, err := c.ReadFile(ctx(t), dir, ""); reason(err) != ReasonIsDirectory {
		t.Fatalf("directory: %v", err)
	}
	if _, _, err := c.ListDir(ctx(t), file, "", 10); reason(err) != ReasonNotDirectory {
		t.Fatalf("list a file: %v", err)
	}
	if err := c.WriteFile(ctx(t), filepath.Join(file, "below"), nil, "", strings.NewReader("x")); reason(err) != ReasonNotDirectory {
		t.Fatalf("write below a file: %v", err)
	}
	if err := c.WriteFile(ctx(t), dir, nil, "", strings.NewReader("x")); reason(err) != ReasonIsDirectory {
		t.Fatalf("write over a directory: %v", err)
	}
	// As another user, the root-only directory is not theirs.
	if err := c.WriteFile(ctx(t), filepath.Join(dir, "theirs"), nil, "65534", strings.NewReader("x")); reason(err) != ReasonPermissionDenied {
		t.Fatalf("write as a user: %v", err)
	}
	if _, err := c.ReadFile(ctx(t), file, "65534"); reason(err) != ReasonPermissionDenied {
		t.Fatalf("read as a user: %v", err)
	}
}

// A cancelled upload leaves nothing behind: no file, no temporary file.
func TestCancelledWriteLeavesNothing(t *testing.T) {
	c, _ := openStdio(t)
	dir := t.TempDir()
	pr, pw := io.Pipe()
	cctx, cancel := context.WithCancel(ctx(t))
	done := make(chan error, 1)
	go func() { done <- c.WriteFile(cctx, filepath.Join(dir, "f"), nil, "", pr) }()
	if _, err := pw.Write(bytes.Repeat([]byte("x"), 100000)); err != nil {
		t.Fatal(err)
	}
	cancel()
	pw.Close()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled write: %v", err)
	}
	// The keeper's helper removes its temporary file as it ends; a later
	// call on the same channel is ordered after that cancel.
	waitFor(t, func() bool {
		left, _ := os.ReadDir(dir)
		return len(left) == 0
	})
	// An upload whose source fails leaves no temporary file either.
	if err := c.WriteFile(ctx(t), filepath.Join(dir, "f"), nil, "", failingReader{}); err == nil {
		t.Fatal("an upload whose reader failed succeeded")
	}
	waitFor(t, func() bool {
		left, _ := os.ReadDir(dir)
		return len(left) == 0
	})
	if r := run(t, c, ExecSpec{Argv: []string{"true"}}); r.status.Code != 0 {
		t.Fatal("channel broken after a cancel")
	}
}

// Replacing a file is writing it: one the user may not write stays as it
// is, even in a directory the user may write (root without capabilities
// is such a user for a 0444 file).
func TestWriteFileRespectsTheFilesOwnMode(t *testing.T) {
	c, _ := openStdio(t)
	if !c.Protected() {
		t.Skip("unprotected keeper: its helpers keep the test's capabilities")
	}
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro.txt")
	if err := os.WriteFile(ro, []byte("original"), 0o444); err != nil {
		t.Fatal(err)
	}
	err := c.WriteFile(ctx(t), ro, nil, "", strings.NewReader("replaced"))
	var fe *FileError
	if !errors.As(err, &fe) || fe.Reason != ReasonPermissionDenied {
		t.Fatalf("write over a read-only file: %v", err)
	}
	if got, _ := os.ReadFile(ro); string(got) != "original" {
		t.Fatalf("the read-only file now holds %q", got)
	}
	// Through a symlink the file it names is written, the link stays.
	rw := filepath.Join(dir, "rw.txt")
	if err := os.WriteFile(rw, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(rw, link); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteFile(ctx(t), link, nil, "", strings.NewReader("new")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(rw); string(got) != "new" {
		t.Fatalf("through the link: %q", got)
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", info, err)
	}
}

// failingReader is an upload whose source fails.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }
