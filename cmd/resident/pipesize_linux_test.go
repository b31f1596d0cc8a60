package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A pipe's buffer grows to hostPipeBytes (both ends see it: it is the
// pipe's); a file that is not a pipe is left alone, without error.
func TestGrowPipes(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.Create(filepath.Join(t.TempDir(), "plain"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	growPipes(int(r.Fd()), int(f.Fd()))
	for _, end := range []*os.File{r, w} {
		size, err := unix.FcntlInt(end.Fd(), unix.F_GETPIPE_SZ, 0)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile("/proc/sys/fs/pipe-max-size")
		max, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
		if size < hostPipeBytes && max >= hostPipeBytes {
			t.Fatalf("pipe buffer %d bytes, want %d (pipe-max-size %d)", size, hostPipeBytes, max)
		}
	}
}
