package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A pipe or a socket, as hosts spawn the resident with, goes on the poller
// (non-blocking); a file, like a terminal, keeps its blocking mode, since
// its description may be shared with the shell.
func TestHostFileMakesOnlyPipesAndSocketsNonBlocking(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pair[1])
	plain, err := os.Create(filepath.Join(t.TempDir(), "plain"))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	rawPipe := dupBlocking(t, int(r.Fd()))
	r.Close()
	rawFile := dupBlocking(t, int(plain.Fd()))
	for name, c := range map[string]struct {
		fd          int
		nonBlocking bool
	}{"pipe": {rawPipe, true}, "socket": {pair[0], true}, "file": {rawFile, false}} {
		f := hostFile(c.fd, name)
		flags, err := unix.FcntlInt(uintptr(c.fd), unix.F_GETFL, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := flags&unix.O_NONBLOCK != 0; got != c.nonBlocking {
			t.Errorf("%s: non-blocking %v, want %v", name, got, c.nonBlocking)
		}
		f.Close()
	}
	// A read before the host wrote waits on the poller (an fd made
	// non-blocking but not polled would fail it with EAGAIN), then
	// delivers what the host writes, and its end as EOF.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	in := hostFile(dupBlocking(t, int(pr.Fd())), "stdin")
	pr.Close()
	defer in.Close()
	go func() {
		time.Sleep(50 * time.Millisecond) // so the read comes first, mostly
		_, _ = pw.WriteString("frame")
		pw.Close()
	}()
	buf := make([]byte, 16)
	if n, err := in.Read(buf); err != nil || string(buf[:n]) != "frame" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if n, err := in.Read(buf); n != 0 || err == nil {
		t.Fatalf("after the host's close: %d bytes, %v", n, err)
	}
}

// dupBlocking is a fresh blocking fd for the same description (Fd made
// the original blocking), as a spawned resident finds its stdio.
func dupBlocking(t *testing.T, fd int) int {
	t.Helper()
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.SetNonblock(dup, false); err != nil {
		t.Fatal(err)
	}
	return dup
}
