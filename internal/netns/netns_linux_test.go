//go:build linux

package netns

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Entering the namespace the resident is already in (a pidfd of itself)
// dials as a plain dial does; it needs the privilege setns needs.
func TestDialThroughOwnNamespace(t *testing.T) {
	if unix.Geteuid() != 0 {
		t.Skip("setns needs root")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	dup, err := Dup(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dup)
	c, err := Dial(context.Background(), dup, "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// A descriptor that names no namespace is ErrCannotEnter (the caller's
// other path), not a connection's failure.
func TestDialOfANonNamespaceIsCannotEnter(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = Dial(context.Background(), int(f.Fd()), "tcp", "127.0.0.1:1")
	if !errors.Is(err, ErrCannotEnter) {
		t.Fatalf("Dial through /dev/null: %v, want ErrCannotEnter", err)
	}
}
