package channel

import (
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
)

// benchServer serves size bytes (from a 1 MiB block) to every connection
// on 127.0.0.1, then closes it.
func benchServer(b *testing.B, size int64) int {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	block := make([]byte, 1<<20)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.AcceptTCP()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				for left := size; left > 0; left -= int64(len(block)) {
					if _, err := c.Write(block[:min(left, int64(len(block)))]); err != nil {
						return
					}
				}
			})
		}
	})
	b.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().(*net.TCPAddr).Port
}

// BenchmarkNetDownload: one connection's download over a connection
// stream through a pipe (the keeper dials, frames, and the client reads),
// beside the same download straight from the socket, in the same run:
// compare the two lines' MB/s. Connection setup is one Dial and Result.
func BenchmarkNetDownload(b *testing.B) {
	const size = 64 << 20
	port := benchServer(b, size)
	b.Run("stream", func(b *testing.B) {
		c := benchConn(b)
		b.SetBytes(size)
		for b.Loop() {
			nc, err := c.Dial(b.Context(), port)
			if err != nil {
				b.Fatal(err)
			}
			if n, err := io.Copy(io.Discard, nc); err != nil || n != size {
				b.Fatalf("%d bytes, %v", n, err)
			}
			_ = nc.CloseWrite()
			nc.Close()
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			d, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				b.Fatal(err)
			}
			if n, err := io.Copy(io.Discard, d); err != nil || n != size {
				b.Fatalf("%d bytes, %v", n, err)
			}
			d.Close()
		}
	})
}

// BenchmarkNetSetup: a connection stream's open and clean close (one
// byte back), beside a direct connection's.
func BenchmarkNetSetup(b *testing.B) {
	port := benchServer(b, 1)
	b.Run("stream", func(b *testing.B) {
		c := benchConn(b)
		for b.Loop() {
			nc, err := c.Dial(b.Context(), port)
			if err != nil {
				b.Fatal(err)
			}
			if n, _ := io.Copy(io.Discard, nc); n != 1 {
				b.Fatalf("%d bytes", n)
			}
			_ = nc.CloseWrite()
			nc.Close()
		}
	})
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			d, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				b.Fatal(err)
			}
			if n, _ := io.Copy(io.Discard, d); n != 1 {
				b.Fatalf("%d bytes", n)
			}
			d.Close()
		}
	})
}
