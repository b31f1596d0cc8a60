//go:build unix

package beneath

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// both runs a test with openat2 and with the descriptor walk.
func both(t *testing.T, f func(t *testing.T)) {
	t.Run("openat2", f)
	t.Run("walk", func(t *testing.T) {
		forceWalk = true
		t.Cleanup(func() { forceWalk = false })
		f(t)
	})
}

func tree(t *testing.T) (root *os.File, dir, outside string) {
	t.Helper()
	dir, outside = t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("OUTSIDE"), 0o644))
	must(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "a", "b", "f"), []byte("inside"), 0o644))
	for name, target := range map[string]string{"abs": filepath.Join(outside, "secret"), "up": "../..", "in": "a/b/f", "a/dirlink": "b", "out": outside} {
		must(t, os.Symlink(target, filepath.Join(dir, name)))
	}
	root, err := os.Open(dir)
	must(t, err)
	t.Cleanup(func() { root.Close() })
	return root, dir, outside
}

func TestOpenRefusesEverySymlinkAndEveryWayOut(t *testing.T) {
	both(t, func(t *testing.T) {
		root, _, _ := tree(t)
		for rel, want := range map[string]error{
			"abs": ErrSymlink, "up/x": ErrSymlink, "in": ErrSymlink, "a/dirlink/f": ErrSymlink, "out/secret": ErrSymlink,
			"../x": ErrEscape, "a/../a/b/f": ErrEscape, "/etc/passwd": ErrEscape,
			"missing": fs.ErrNotExist, "a/b/f/x": syscall.ENOTDIR,
		} {
			f, err := Open(root, rel, os.O_RDONLY)
			if err == nil {
				f.Close()
				t.Errorf("Open(%q) succeeded", rel)
			} else if !errors.Is(err, want) {
				t.Errorf("Open(%q) = %v, want %v", rel, err, want)
			}
		}
		for _, rel := range []string{"a/b/f", "./a/b/f", "a//b/f", "a/b/./f"} {
			f, err := Open(root, rel, os.O_RDONLY)
			if err != nil {
				t.Fatalf("Open(%q): %v", rel, err)
			}
			data, _ := io.ReadAll(f)
			f.Close()
			if string(data) != "inside" {
				t.Errorf("Open(%q) read %q", rel, data)
			}
		}
		for _, rel := range []string{"", ".", "a", "a/b/", "a//b//", "./a/./"} {
			f, err := Open(root, rel, os.O_RDONLY|syscall.O_DIRECTORY)
			if err != nil {
				t.Fatalf("Open(%q) as a directory: %v", rel, err)
			}
			f.Close()
		}
	})
}

// A goroutine swaps a directory on the path for a symlink to a directory
// outside as fast as it can while reads loop: no read ever returns the
// outside file's bytes.
func TestOpenUnderASwapNeverLeaves(t *testing.T) {
	both(t, func(t *testing.T) {
		root, dir, outside := tree(t)
		must(t, os.WriteFile(filepath.Join(outside, "f"), []byte("OUTSIDE"), 0o644))
		must(t, os.Symlink(outside, filepath.Join(dir, "swap-link")))
		must(t, os.Rename(filepath.Join(dir, "a", "b"), filepath.Join(dir, "swap-dir")))
		d, l, at := filepath.Join(dir, "swap-dir"), filepath.Join(dir, "swap-link"), filepath.Join(dir, "a", "b")
		stop := make(chan struct{})
		var swaps atomic.Int64
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				// at is the directory, then the link, then nothing.
				_ = os.Rename(d, at)
				_ = os.Rename(at, d)
				_ = os.Rename(l, at)
				_ = os.Rename(at, l)
				swaps.Add(1)
			}
		})
		var inside, refused int
		for range 4000 {
			f, err := Open(root, "a/b/f", os.O_RDONLY)
			if err != nil {
				refused++
				continue
			}
			data, _ := io.ReadAll(f)
			f.Close()
			if string(data) != "inside" {
				t.Fatalf("a read under the swap returned %q", data)
			}
			inside++
		}
		close(stop)
		wg.Wait()
		t.Logf("%d swaps; %d reads inside, %d refused", swaps.Load(), inside, refused)
	})
}

func TestLstatDescribesALinkAsOne(t *testing.T) {
	root, _, _ := tree(t)
	info, err := Lstat(root, "out")
	must(t, err)
	if info.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("out: mode %v, want a symlink", info.Mode())
	}
	if info, err := Lstat(root, "a"); err != nil || !info.IsDir() {
		t.Errorf("a: %v %v", info, err)
	}
	if _, err := Lstat(root, "a/b"); !errors.Is(err, ErrEscape) {
		t.Errorf("Lstat of a path, not a name: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
