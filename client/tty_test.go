package client_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/client"
	"github.com/resident-dev/resident/protocol"
)

// A terminal exec on the real local provider: the size given at start is
// the command's, Resize reaches it, and a resize of an exec without a
// terminal is invalid_request.
func TestExecTerminalAndResize(t *testing.T) {
	r := spawn(t, client.Options{}, protocol.InitializeParams{})
	if !r.Info().Capabilities.TTY {
		t.Skip("local announces no tty (no bubblewrap)")
	}
	ctx := ctxT(t)
	id := r.sandbox(t, protocol.Spec{})
	// The command reports its size, then waits, polling inside the
	// sandbox, until it sees the new one.
	script := `stty size; while [ "$(stty size)" != "40 120" ]; do sleep 0.05; done; echo resized; stty size`
	out := &syncBuffer{}
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	done := make(chan error, 1)
	var res *protocol.ExecResult
	go func() {
		var err error
		res, err = r.Exec(ctx, protocol.ExecParams{SandboxID: id, ExecID: "term", Argv: []string{"sh", "-c", script}, TTY: &protocol.WindowSize{Rows: 30, Cols: 100}}, client.Streams{Stdout: out, Stdin: stdinR})
		done <- err
	}()
	awaitOutput(t, out, "30 100")
	if err := r.Resize(ctx, "term", protocol.WindowSize{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.Contains(out.String(), "resized\r\n40 120") {
		t.Fatalf("exit %d, output %q", res.ExitCode, out.String())
	}
	// Ended: conflict; never a terminal: invalid_request.
	if err := r.Resize(ctx, "term", protocol.WindowSize{Rows: 1, Cols: 1}); err == nil {
		t.Fatal("resize of an ended exec succeeded")
	}
	plainDone := make(chan error, 1)
	plainOut := &syncBuffer{}
	go func() {
		_, err := r.Exec(ctx, protocol.ExecParams{SandboxID: id, ExecID: "plain", Argv: []string{"sh", "-c", "echo up; read x"}, Stdin: true}, client.Streams{Stdout: plainOut})
		plainDone <- err
	}()
	awaitOutput(t, plainOut, "up")
	err := r.Resize(ctx, "plain", protocol.WindowSize{Rows: 10, Cols: 10})
	if client.KindOf(err) != protocol.KindInvalidRequest {
		t.Fatalf("resize without a terminal: %v", err)
	}
	if err := r.WriteStdin(ctx, protocol.ExecStdinParams{ExecID: "plain", EOF: true}); err != nil {
		t.Fatal(err)
	}
	if err := <-plainDone; err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
}

// awaitOutput waits until buf holds want; testLimit bounds the wait so a
// hang fails with what arrived.
func awaitOutput(t *testing.T, buf *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(testLimit)
	for !strings.Contains(buf.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the output after %s: %q", want, testLimit, buf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
