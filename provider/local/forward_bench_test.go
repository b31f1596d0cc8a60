package local_test

import (
	"context"
	"io"
	"net"
	"strconv"
	"testing"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/local"
)

// BenchmarkForwardedConnection compares, in one run, the three ways a
// forwarded connection can reach a server on the sandbox's loopback: direct
// (the baseline: the sandbox has spec.network "host", so the test's own
// server on 127.0.0.1 is the sandbox's too), DialSandbox (as root: the
// resident's own socket in the sandbox's namespace) and the keeper's relay
// exec over the channel (what local does without root). Each op is one new
// connection reading the whole body: read ns/op of "small" as the setup,
// MB/s of "big" as the throughput, and divide by "direct".
func BenchmarkForwardedConnection(b *testing.B) {
	if !bwrapInstalled() {
		b.Skip("local forwards only under bwrap")
	}
	p, err := local.New(provider.Config{StateDir: b.TempDir(), Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if err := p.ApplyAuth(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	id, err := p.Create(ctx, protocol.Spec{Network: "host"}, provider.Owner{Key: "bench-install-id", InstallID: "bench"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Terminate(ctx, id)
	for _, size := range []struct {
		name  string
		bytes int
	}{{"small", 3}, {"big", 16 << 20}} {
		body := make([]byte, size.bytes)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { _, _ = c.Write(body); _ = c.Close() }()
			}
		}()
		port := ln.Addr().(*net.TCPAddr).Port
		read := func(b *testing.B, r io.Reader) {
			n, err := io.Copy(io.Discard, r)
			if err != nil || n != int64(size.bytes) {
				b.Fatalf("read %d bytes (%v), want %d", n, err, size.bytes)
			}
		}
		b.Run(size.name+"/direct", func(b *testing.B) {
			b.SetBytes(int64(size.bytes))
			for b.Loop() {
				c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
				if err != nil {
					b.Fatal(err)
				}
				read(b, c)
				_ = c.Close()
			}
		})
		b.Run(size.name+"/dial", func(b *testing.B) {
			b.SetBytes(int64(size.bytes))
			for b.Loop() {
				c, err := p.(provider.Dialer).DialSandbox(ctx, id, port)
				if err != nil {
					b.Skipf("DialSandbox: %v", err)
				}
				read(b, c)
				_ = c.Close()
			}
		})
		b.Run(size.name+"/relay", func(b *testing.B) {
			b.SetBytes(int64(size.bytes))
			for b.Loop() {
				proc, err := p.Exec(ctx, id, provider.ExecRequest{Argv: p.(provider.Relayer).RelayCommand(port), Stdin: true})
				if err != nil {
					b.Fatal(err)
				}
				_ = proc.Stdin().Close()
				go func() { _, _ = io.Copy(io.Discard, proc.Stderr()) }()
				read(b, proc.Stdout())
				if _, err := proc.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
		_ = ln.Close()
	}
}
