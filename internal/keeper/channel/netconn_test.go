package channel

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// loopbackServer accepts connections on 127.0.0.1 (the keeper under test
// runs on this machine: its loopback is the test's) and hands each to
// serve on its own goroutine; every one has ended when the test does.
func loopbackServer(t *testing.T, serve func(c *net.TCPConn)) int {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.AcceptTCP()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				serve(c)
			})
		}
	})
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().(*net.TCPAddr).Port
}

func dialNet(t *testing.T, c *Conn, port int) *NetConn {
	t.Helper()
	nc, err := c.Dial(ctx(t), port)
	if err != nil {
		t.Fatalf("Dial(%d): %v", port, err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// A connection stream half-closes each way on its own: the client's
// CloseWrite reaches the server as EOF and its answer still comes back;
// a server that half-closes first still reads what the client sends after.
func TestNetConnHalfClosesBothWays(t *testing.T) {
	c, _ := openStdio(t)
	if !c.Supports(keeperproto.FeatureNet) {
		t.Fatal("the keeper does not announce net")
	}
	late := make(chan string, 1)
	port := loopbackServer(t, func(s *net.TCPConn) {
		var first [1]byte
		if _, err := io.ReadFull(s, first[:]); err != nil {
			return
		}
		if first[0] == 'q' { // the client speaks first and half-closes
			rest, _ := io.ReadAll(s)
			_, _ = io.WriteString(s, "answer to q"+string(rest))
			_ = s.CloseWrite()
			return
		}
		_, _ = io.WriteString(s, "server done") // the server half-closes first
		_ = s.CloseWrite()
		rest, _ := io.ReadAll(s)
		late <- string(rest)
	})

	nc := dialNet(t, c, port)
	_, _ = io.WriteString(nc, "question")
	if err := nc.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(nc)
	if err != nil || string(got) != "answer to question" {
		t.Fatalf("read %q, %v after the client's half-close", got, err)
	}

	nc = dialNet(t, c, port)
	_, _ = io.WriteString(nc, "s")
	got, err = io.ReadAll(nc)
	if err != nil || string(got) != "server done" {
		t.Fatalf("read %q, %v before the server's half-close", got, err)
	}
	if _, err := io.WriteString(nc, "late words"); err != nil {
		t.Fatalf("writing after the server's half-close: %v", err)
	}
	if err := nc.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if got := <-late; got != "late words" {
		t.Fatalf("the server read %q after its own half-close", got)
	}
}

// Each connection has its own credit both ways: one whose reader stops,
// and one whose server stops reading, hold back only themselves; both
// finish, every byte in order, once their readers read again.
func TestNetConnCreditStallsOnlyItsConnection(t *testing.T) {
	c, _ := openStdio(t)
	const size = 64 << 20
	body := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	want := sha256.Sum256(body)
	var sentAll sync.WaitGroup
	sentAll.Add(1)
	release := make(chan struct{})
	upstream := make(chan [32]byte, 1)
	port := loopbackServer(t, func(s *net.TCPConn) {
		var mode [1]byte
		if _, err := io.ReadFull(s, mode[:]); err != nil {
			return
		}
		switch mode[0] {
		case 'd': // download: more than every buffer on the way holds
			_, _ = s.Write(body)
			_ = s.CloseWrite()
			sentAll.Done()
		case 'u': // upload: read only once released
			<-release
			h := sha256.New()
			_, _ = io.Copy(h, s)
			upstream <- [32]byte(h.Sum(nil))
			_ = s.CloseWrite()
		case 'e': // echo
			_, _ = io.Copy(s, s)
			_ = s.CloseWrite()
		}
	})

	down := dialNet(t, c, port)
	_, _ = io.WriteString(down, "d")
	up := dialNet(t, c, port)
	_, _ = io.WriteString(up, "u")
	uploaded := make(chan error, 1)
	go func() {
		_, err := up.Write(body)
		if err == nil {
			err = up.CloseWrite()
		}
		uploaded <- err
	}()

	// Neither stalled connection holds this one back.
	for i := range 20 {
		echo := dialNet(t, c, port)
		msg := strings.Repeat("echo ", 1000*(i+1))
		go func() { _, _ = io.WriteString(echo, "e"+msg); _ = echo.CloseWrite() }()
		got, err := io.ReadAll(echo)
		if err != nil || string(got) != msg {
			t.Fatalf("echo %d: %d bytes, %v", i, len(got), err)
		}
	}
	select {
	case err := <-uploaded:
		t.Fatalf("an upload of %d bytes to a server that reads nothing ended: %v", size, err)
	default:
	}

	close(release)
	h := sha256.New()
	if n, err := io.Copy(h, down); err != nil || n != size || !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatalf("download: %d bytes, %v, hash match %v", n, err, bytes.Equal(h.Sum(nil), want[:]))
	}
	sentAll.Wait()
	if err := <-uploaded; err != nil {
		t.Fatalf("upload: %v", err)
	}
	if rest, err := io.ReadAll(up); err != nil || len(rest) != 0 {
		t.Fatalf("upload's answer: %q, %v", rest, err)
	}
	if <-upstream != want {
		t.Fatal("the server read other bytes than were uploaded")
	}
}

// A port nothing listens on is a refusal with its reason; a connection
// the server resets ends with a typed reset; Close gives one up.
func TestNetConnRefusalAndReset(t *testing.T) {
	c, _ := openStdio(t)
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	_, err = c.Dial(ctx(t), closed)
	var ne *NetError
	if !errors.As(err, &ne) || ne.Op != "dial" || ne.Reason != NetRefused {
		t.Fatalf("Dial of a closed port: %v, want a refused NetError", err)
	}

	gotReset := make(chan error, 1)
	reading := make(chan struct{})
	port := loopbackServer(t, func(s *net.TCPConn) {
		var b [1]byte
		if _, err := io.ReadFull(s, b[:]); err != nil {
			return
		}
		if b[0] == 'r' {
			_ = s.SetLinger(0) // close sends a reset
			return
		}
		close(reading)
		_, err := io.ReadAll(s) // 'c': until the client gives up
		gotReset <- err
	})
	nc := dialNet(t, c, port)
	_, _ = io.WriteString(nc, "r")
	_, err = io.ReadAll(nc)
	if !errors.As(err, &ne) || ne.Op != "reset" || ne.Reason != NetReset {
		t.Fatalf("reading a connection the server reset: %v, want a reset NetError", err)
	}
	if _, err := nc.Write([]byte("more")); err == nil {
		t.Fatal("a write after the reset was taken")
	}

	nc = dialNet(t, c, port)
	_, _ = io.WriteString(nc, "c")
	<-reading
	if err := nc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-gotReset; err == nil {
		t.Fatal("the server saw a clean end of a connection the client gave up")
	}
	if _, err := nc.Read(make([]byte, 1)); err == nil {
		t.Fatal("a read after Close returned no error")
	}
	if _, err := c.Dial(ctx(t), 0); err == nil {
		t.Fatal("Dial of port 0 was taken")
	}
}
