package client_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resident-dev/resident/client"
	"github.com/resident-dev/resident/internal/testhost"
	"github.com/resident-dev/resident/protocol"
)

// testLimit bounds waits so a hang fails with a message; it is not a
// performance assertion.
const testLimit = 30 * time.Second

type resident struct {
	*client.Client
	cmd  *exec.Cmd
	logs *syncBuffer
}

// spawn starts the real resident with the local provider and initializes.
func spawn(t testing.TB, opts client.Options, init protocol.InitializeParams) *resident {
	t.Helper()
	state := t.TempDir()
	t.Cleanup(func() { testhost.EndLocalInits(state) }) // last: after the resident stopped
	cmd := exec.Command(residentBin, "--state-dir", state, "--log-level", "debug")
	logs := &syncBuffer{}
	opts.Stderr = logs
	c, err := client.Spawn(cmd, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if init.InstallID == "" {
		init.InstallID = "client-test"
	}
	ctx, cancel := context.WithTimeout(context.Background(), testLimit)
	defer cancel()
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v\n%s", err, logs)
	}
	return &resident{Client: c, cmd: cmd, logs: logs}
}

func (r *resident) sandbox(t *testing.T, spec protocol.Spec) string {
	t.Helper()
	id, err := r.Create(ctxT(t), protocol.CreateParams{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testLimit)
	t.Cleanup(cancel)
	return ctx
}

type syncBuffer = testhost.SyncBuffer

func TestSession(t *testing.T) {
	r := spawn(t, client.Options{}, protocol.InitializeParams{InstallID: "session-test", TagPrefix: "acme"})
	ctx := ctxT(t)
	info := r.Info()
	if info.Provider.Name != "local" || info.OwnerTag != "acme-install-id" || len(info.ErrorKinds) != len(protocol.Kinds) {
		t.Fatalf("info: %+v", info)
	}
	id, err := r.Create(ctx, protocol.CreateParams{Tags: map[string]string{"task": "t1"}})
	if err != nil {
		t.Fatal(err)
	}

	// Binary bytes pass untouched, stdout and stderr stay apart, the exit
	// code is a result.
	var stdout, stderr bytes.Buffer
	res, err := r.Exec(ctx, protocol.ExecParams{SandboxID: id, Argv: []string{"sh", "-c", `printf 'a\377\000\376b'; printf err >&2; exit 3`}},
		client.Streams{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "a\xff\x00\xfeb" || stderr.String() != "err" || res.ExitCode != 3 || res.StdoutBytes != 5 {
		t.Fatalf("stdout %q stderr %q result %+v", stdout.Bytes(), stderr.String(), res)
	}

	mode := uint32(0o755)
	if n, err := r.WriteFile(ctx, protocol.WriteFileParams{SandboxID: id, Path: "/scripts/hello", Data: []byte("#!/bin/sh\necho hi\n"), Mode: &mode}); err != nil || n != 18 {
		t.Fatalf("write_file: %d %v", n, err)
	}
	stdout.Reset()
	if _, err := r.Exec(ctx, protocol.ExecParams{SandboxID: id, Argv: []string{"./scripts/hello"}}, client.Streams{Stdout: &stdout}); err != nil || stdout.String() != "hi\n" {
		t.Fatalf("written file: %q %v", stdout.String(), err)
	}

	boxes, err := r.ListOwned(ctx)
	if err != nil || len(boxes) != 1 || boxes[0].SandboxID != id || boxes[0].Tags["acme-install-id"] != "session-test" {
		t.Fatalf("list_owned: %+v %v", boxes, err)
	}
	if owner, owned, err := r.ReadOwner(ctx, id); err != nil || !owned || owner != "session-test" {
		t.Fatalf("read_owner: %q %v %v", owner, owned, err)
	}
	for _, want := range []bool{true, false} {
		if existed, err := r.Terminate(ctx, id); err != nil || existed != want {
			t.Fatalf("terminate: %v %v, want %v", existed, err, want)
		}
	}
	if err := r.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("close after shutdown: %v", err)
	}
	if _, err := r.ListOwned(ctx); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("call after close: %v", err)
	}
}

// Concurrent execs each get exactly their own output.
func TestConcurrentExecs(t *testing.T) {
	r := spawn(t, client.Options{}, protocol.InitializeParams{})
	ctx := ctxT(t)
	id := r.sandbox(t, protocol.Spec{})
	const n = 8
	outs := make([]bytes.Buffer, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := r.Exec(ctx, protocol.ExecParams{SandboxID: id, Argv: []string{"sh", "-c", fmt.Sprintf("for j in $(seq 200); do echo %d; done", i)}},
				client.Streams{Stdout: &outs[i]})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if want := strings.Repeat(fmt.Sprintf("%d\n", i), 200); outs[i].String() != want {
			t.Fatalf("exec %d got %d bytes of mixed output", i, outs[i].Len())
		}
	}
}

func TestExecStdin(t *testing.T) {
	r := spawn(t, client.Options{}, protocol.InitializeParams{})
	ctx := ctxT(t)
	id := r.sandbox(t, protocol.Spec{})

	// 1 MiB of random bytes round trip through cat, in several chunks.
	in := make([]byte, 1<<20)
	_, _ = rand.Read(in)
	var out bytes.Buffer
	res, err := r.Exec(ctx, protocol.ExecParams{SandboxID: id, Argv: []string{"cat"}}, client.Streams{Stdin: bytes.NewReader(in), Stdout: &out})
	if err != nil || res.ExitCode != 0 || !bytes.Equal(out.Bytes(), in) {
		t.Fatalf("cat: %d bytes back, %+v, %v", out.Len(), res, err)
	}

	// A process that stops reading early ends normally; the forwarder stops.
	out.Reset()
	if _, err := r.Exec(ctx, protocol.ExecParams{SandboxID: id, Argv: []string{"head", "-c", "3"}}, client.Streams{Stdin: bytes.NewReader(in), Stdout: &out}); err != nil || out.Len() != 3 {
		t.Fatalf("head: %q %v", out.Bytes(), err)
	}

	// The host drives stdin itself, once the exec has started.
	manual := &notifyWriter{first: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := r.Exec(ctx, protocol.ExecParams{SandboxID: id, Argv: []string{"sh", "-c", "echo go; cat"}, ExecID: "manual", Stdin: true}, client.Streams{Stdout: manual})
		done <- err
	}()
	<-manual.first
	if err := r.WriteStdin(ctx, protocol.ExecStdinParams{ExecID: "manual", Data: []byte("by hand\n"), EOF: true}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || manual.String() != "go\nby hand\n" {
		t.Fatalf("manual stdin: %q %v", manual.String(), err)
	}
}

// notifyWriter signals the first write.
type notifyWriter struct {
	syncBuffer
	once  sync.Once
	first chan struct{}
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	w.once.Do(func() { close(w.first) })
	return n, err
}

func TestCancelStillWaitsForTheAnswer(t *testing.T) {
	r := spawn(t, client.Options{}, protocol.InitializeParams{})
	id := r.sandbox(t, protocol.Spec{})
	ctx, cancel := context.WithCancel(ctxT(t))
	out := &notifyWriter{first: make(chan struct{})}
	go func() {
		<-out.first
		cancel()
	}()
	start := time.Now()
	res, err := r.Exec(ctx, protocol.ExecParams{SandboxID: id, Argv: []string{"sh", "-c", "echo started; sleep 30"}}, client.Streams{Stdout: out})
	if !errors.Is(err, client.ErrCancelled) || !errors.Is(err, context.Canceled) || res != nil {
		t.Fatalf("want cancelled, got %+v %v", res, err)
	}
	var rpcErr *client.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != protocol.CodeCancelled || rpcErr.Method != protocol.MethodSandboxExec {
		t.Fatalf("want the resident's cancelled answer, got %#v", err)
	}
	if time.Since(start) > 20*time.Second || out.String() != "started\n" {
		t.Fatalf("after %s, output %q", time.Since(start), out.String())
	}
	// The session goes on.
	if _, err := r.ListOwned(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	// A context that is already done sends nothing.
	if _, err := r.ListOwned(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("dead context: %v", err)
	}
}

func TestKill(t *testing.T) {
	r := spawn(t, client.Options{}, protocol.InitializeParams{})
	ctx := ctxT(t)
	id := r.sandbox(t, protocol.Spec{})
	out := &notifyWriter{first: make(chan struct{})}
	go func() {
		<-out.first
		_ = r.Kill(ctx, "victim")
	}()
	res, err := r.Exec(ctx, protocol.ExecParams{SandboxID: id, ExecID: "victim", Argv: []string{"sh", "-c", "echo up; sleep 30"}}, client.Streams{Stdout: out})
	if err != nil || !res.Killed {
		t.Fatalf("kill: %+v %v", res, err)
	}
}

func TestNotFound(t *testing.T) {
	r := spawn(t, client.Options{}, protocol.InitializeParams{})
	ctx := ctxT(t)
	const missing = "lcl-0000000000000000"
	_, err := r.Exec(ctx, protocol.ExecParams{SandboxID: missing, Argv: []string{"true"}}, client.Streams{})
	var rpcErr *client.Error
	if !errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrConflict) || !errors.As(err, &rpcErr) ||
		rpcErr.Code != protocol.CodeNotFound || client.KindOf(err) != protocol.KindNotFound {
		t.Fatalf("exec in a missing sandbox: %#v", err)
	}
	if !strings.Contains(err.Error(), "sandbox/exec") || !strings.Contains(err.Error(), "not_found") {
		t.Fatalf("message: %v", err)
	}
	if existed, err := r.Terminate(ctx, missing); err != nil || existed {
		t.Fatalf("terminate missing: %v %v", existed, err)
	}
	if _, owned, err := r.ReadOwner(ctx, missing); err != nil || owned {
		t.Fatalf("read_owner missing: %v %v", owned, err)
	}
	if _, err := r.ListDir(ctx, protocol.ListDirParams{Root: "no-such-volume"}); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("list_dir missing: %v", err)
	}
	if err := r.Kill(ctx, "never-started"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("kill unknown exec: %v", err)
	}
	// An exec id is refused by the client while its exec runs; once that
	// has answered, the resident takes the id again (it keeps no record of
	// finished execs).
	id := r.sandbox(t, protocol.Spec{})
	if _, err := r.Exec(ctx, protocol.ExecParams{SandboxID: id, ExecID: "once", Argv: []string{"true"}}, client.Streams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Exec(ctx, protocol.ExecParams{SandboxID: id, ExecID: "once", Argv: []string{"true"}}, client.Streams{}); err != nil {
		t.Fatalf("exec id reused after its exec answered: %v", err)
	}
}

func TestStore(t *testing.T) {
	r := spawn(t, client.Options{}, protocol.InitializeParams{})
	ctx := ctxT(t)
	id := r.sandbox(t, protocol.Spec{Volumes: []protocol.VolumeMount{{Name: "work", Path: "work"}}})
	if _, err := r.Exec(ctx, protocol.ExecParams{SandboxID: id, Argv: []string{"sh", "-c", `printf 'x\000\377y' > work/data.bin`}}, client.Streams{}); err != nil {
		t.Fatal(err)
	}
	vols, err := r.ListVolumes(ctx)
	if err != nil || len(vols) != 1 || vols[0].Name != "work" {
		t.Fatalf("volumes: %+v %v", vols, err)
	}
	dir, err := r.ListDir(ctx, protocol.ListDirParams{Root: "work"})
	if err != nil || len(dir.Entries) != 1 || dir.Entries[0].Name != "data.bin" || dir.Entries[0].Size != 4 {
		t.Fatalf("list_dir: %+v %v", dir, err)
	}
	var got bytes.Buffer
	res, err := r.ReadFile(ctx, "work", "data.bin", &got)
	if err != nil || got.String() != "x\x00\xffy" || res.Size != 4 || res.Redacted {
		t.Fatalf("read_file: %q %+v %v", got.Bytes(), res, err)
	}
	if _, err := r.ReadFile(ctx, "work", "nope", &got); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("read missing file: %v", err)
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriterErrorKillsTheExec(t *testing.T) {
	r := spawn(t, client.Options{}, protocol.InitializeParams{})
	id := r.sandbox(t, protocol.Spec{})
	res, err := r.Exec(ctxT(t), protocol.ExecParams{SandboxID: id, Argv: []string{"sh", "-c", "echo one; sleep 30"}}, client.Streams{Stdout: failingWriter{}})
	if err == nil || !strings.Contains(err.Error(), "disk full") || res == nil || !res.Killed {
		t.Fatalf("want the write error and a killed result, got %+v %v", res, err)
	}
}

func TestResidentDiesMidCall(t *testing.T) {
	r := spawn(t, client.Options{}, protocol.InitializeParams{})
	id := r.sandbox(t, protocol.Spec{})
	out := &notifyWriter{first: make(chan struct{})}
	go func() {
		<-out.first
		_ = r.cmd.Process.Kill()
	}()
	start := time.Now()
	_, err := r.Exec(ctxT(t), protocol.ExecParams{SandboxID: id, Argv: []string{"sh", "-c", "echo up; sleep 30"}}, client.Streams{Stdout: out})
	var exit *client.ExitError
	if !errors.Is(err, client.ErrExited) || !errors.As(err, &exit) || exit.Signal != "killed" || time.Since(start) > 20*time.Second {
		t.Fatalf("want an ExitError for SIGKILL, got %v after %s", err, time.Since(start))
	}
	if !strings.HasPrefix(err.Error(), "sandbox/exec: resident terminated by signal: killed") {
		t.Fatalf("message: %v", err)
	}
	t.Log(err)
	// Later calls fail the same way at once; Close reports the death.
	if _, err := r.ListOwned(ctxT(t)); !errors.Is(err, client.ErrExited) {
		t.Fatalf("call after death: %v", err)
	}
	if err := r.Close(); !errors.Is(err, client.ErrExited) {
		t.Fatalf("close after death: %v", err)
	}
}

func TestCredentialsExpiry(t *testing.T) {
	// The callback closes the client, as a host that respawns would: it
	// runs off the read loop, so this cannot deadlock.
	expiredMsgs := make(chan string, 2)
	closed := make(chan error, 1)
	expireAt := time.Now().Add(2 * time.Second)
	var r *resident
	closeNow := make(chan struct{})
	r = spawn(t, client.Options{OnCredentialsExpired: func(msg string) {
		expiredMsgs <- msg
		<-closeNow
		closed <- r.Close()
	}}, protocol.InitializeParams{Credentials: map[string]string{"api_token": "tok_expiring_123"}, CredentialsExpireAt: &expireAt})
	id := r.sandbox(t, protocol.Spec{})
	_, err := r.Exec(ctxT(t), protocol.ExecParams{SandboxID: id, Argv: []string{"sleep", "30"}}, client.Streams{})
	if !errors.Is(err, client.ErrCredentialsExpired) || !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("in-flight exec at expiry: %v", err)
	}
	select {
	case <-r.Expired():
	case <-time.After(testLimit):
		t.Fatal("Expired() not closed")
	}
	if msg := <-expiredMsgs; !strings.Contains(msg, "expired") || msg != r.ExpiredMessage() {
		t.Fatalf("event message %q", msg)
	}
	if _, err := r.ListOwned(ctxT(t)); !errors.Is(err, client.ErrCredentialsExpired) {
		t.Fatalf("call after expiry: %v", err)
	}
	close(closeNow)
	err = <-closed
	t.Log(err)
	var exit *client.ExitError
	if !errors.As(err, &exit) || exit.Code != 3 || !errors.Is(err, client.ErrCredentialsExpired) {
		t.Fatalf("close after expiry: %v", err)
	}
	if len(expiredMsgs) != 0 {
		t.Fatal("the event fired twice")
	}
}

func TestCloseKillsAStuckResident(t *testing.T) {
	// A "resident" that ignores stdin EOF: Close must kill it after the grace.
	cmd := exec.Command("sh", "-c", "exec sleep 60")
	c, err := client.Spawn(cmd, client.Options{CloseGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = c.Close()
	var exit *client.ExitError
	if !errors.As(err, &exit) || !exit.Killed || time.Since(start) > 10*time.Second {
		t.Fatalf("close: %v after %s", err, time.Since(start))
	}
}

func TestSpawnRefusesOwnedStdio(t *testing.T) {
	cmd := exec.Command(residentBin)
	cmd.Stdout = &bytes.Buffer{}
	if _, err := client.Spawn(cmd, client.Options{}); err == nil {
		t.Fatal("Spawn accepted a cmd with Stdout set")
	}
	if _, err := client.Spawn(exec.Command("/nonexistent/resident"), client.Options{}); err == nil {
		t.Fatal("Spawn of a missing binary succeeded")
	}
}
