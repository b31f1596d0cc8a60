package client_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"

	"github.com/resident-dev/resident/client"
	"github.com/resident-dev/resident/internal/testhost"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	_ "github.com/resident-dev/resident/provider/local"
	residentpkg "github.com/resident-dev/resident/resident"
)

// attach serves an in-process resident on a pipe and attaches a client.
func attach(t testing.TB, limits protocol.Limits) (*client.Client, <-chan error) {
	t.Helper()
	notifier := &residentpkg.Notifier{}
	state := t.TempDir()
	t.Cleanup(func() { testhost.EndLocalInits(state) })
	prov, err := provider.Open("local", provider.Config{StateDir: state, Notify: notifier.Notify})
	if err != nil {
		t.Fatal(err)
	}
	hostEnd, residentEnd := net.Pipe()
	served := make(chan error, 1)
	go func() {
		defer prov.Close()
		served <- residentpkg.Serve(context.Background(), residentEnd, residentpkg.Options{Provider: prov, Notifier: notifier, Limits: limits})
	}()
	c := client.Attach(hostEnd, client.Options{})
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Initialize(ctxT(t), protocol.InitializeParams{InstallID: "attached"}); err != nil {
		t.Fatal(err)
	}
	return c, served
}

// Attach works over any stream.
func TestAttach(t *testing.T) {
	c, served := attach(t, residentpkg.DefaultLimits())
	ctx := ctxT(t)
	id, err := c.Create(ctx, protocol.CreateParams{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := c.Exec(ctx, protocol.ExecParams{SandboxID: id, Argv: []string{"echo", "attached"}}, client.Streams{Stdout: &out}); err != nil || out.String() != "attached\n" {
		t.Fatalf("exec: %q %v", out.String(), err)
	}
	if _, err := c.Terminate(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve after the host closed: %v", err)
	}
	if _, err := c.ListOwned(ctx); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}

// A request over the announced max_frame_bytes would end the session (the
// resident exits 2); the client refuses it and the session goes on.
func TestOversizedRequestIsRefusedLocally(t *testing.T) {
	limits := residentpkg.DefaultLimits()
	limits.MaxFrameBytes = 64 << 10
	c, _ := attach(t, limits)
	ctx := ctxT(t)
	id, err := c.Create(ctx, protocol.CreateParams{})
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 64<<10)
	if _, err := c.WriteFile(ctx, protocol.WriteFileParams{SandboxID: id, Path: "/big", Data: big}); !errors.Is(err, client.ErrInvalidRequest) {
		t.Fatalf("oversized frame: %v", err)
	}
	if n, err := c.WriteFile(ctx, protocol.WriteFileParams{SandboxID: id, Path: "/small", Data: big[:10]}); err != nil || n != 10 {
		t.Fatalf("after the refusal: %d %v", n, err)
	}
}
