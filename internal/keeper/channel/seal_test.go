package channel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// recorder keeps a copy of everything the keeper wrote: what a node's pod
// log would hold of a keeper behind a pod's attach stream.
type recorder struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.Write(p)
}

func (r *recorder) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.buf.Bytes())
}

// attachHub is a keeper's stdio as a pod's attach subresource gives it:
// its stdout recorded (the pod log) and copied to every attached reader,
// its stdin shared by all and open across attaches.
type attachHub struct {
	k   *stdioKeeper
	log *recorder
	mu  sync.Mutex
	out map[*io.PipeWriter]bool
}

func newAttachHub(k *stdioKeeper, log *recorder) *attachHub {
	h := &attachHub{k: k, log: log, out: map[*io.PipeWriter]bool{}}
	go h.pump()
	return h
}

func (h *attachHub) pump() {
	buf := make([]byte, 64<<10)
	for {
		n, err := h.k.out.Read(buf)
		if n > 0 {
			h.log.Write(buf[:n])
			h.mu.Lock()
			for w := range h.out {
				if _, err := w.Write(buf[:n]); err != nil {
					delete(h.out, w)
				}
			}
			h.mu.Unlock()
		}
		if err != nil {
			h.mu.Lock()
			for w := range h.out {
				w.CloseWithError(err)
			}
			h.mu.Unlock()
			return
		}
	}
}

// attach is one attacher's stream; closing it detaches.
func (h *attachHub) attach() io.ReadWriteCloser {
	pr, pw := io.Pipe()
	h.mu.Lock()
	h.out[pw] = true
	h.mu.Unlock()
	return pipeRW{Reader: pr, WriteCloser: nopCloser{h.k.stdin}, rc: pr}
}

func (h *attachHub) open(t *testing.T, seal bool) *Conn {
	t.Helper()
	c, err := Open(ctx(t), h.attach(), Options{Seal: seal})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// nopCloser keeps the keeper's stdin open across attaches.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// With Seal, nothing the keeper writes holds a canary planted in an exec's
// stdout and stderr, in a written file read back, in the keeper's own
// environment (its Welcome) or in a listed file name: every frame on the
// wire is sealed, Fenced aside; a second holder gets a key of its own;
// a holder that asks for no sealing (Docker, local) still reads plaintext
// from the same keeper.
func TestSealedChannelWritesOnlyCiphertext(t *testing.T) {
	const canary = "CANARY-d41d8cd98f00b204"
	env := append([]string{"KEEPER_SECRET=" + canary}, testEnv...)
	k := startStdioEnv(t, env)
	var log recorder
	hub := newAttachHub(k, &log)
	c := hub.open(t, true)
	if !c.Sealed() || !c.Supports(keeperproto.FeatureSeal) {
		t.Fatal("the channel is not sealed")
	}
	if !strings.Contains(strings.Join(c.Env(), "\n"), canary) {
		t.Fatal("the sealed Welcome lost the keeper's environment")
	}
	r := run(t, c, ExecSpec{Argv: []string{"sh", "-c", "echo " + canary + "; echo " + canary + " >&2"}})
	if r.stdout != canary+"\n" || r.stderr != canary+"\n" || r.status.Code != 0 {
		t.Fatalf("exec over the sealed channel: %+v", r)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, canary)
	body := strings.Repeat(canary, 10000) // several frames
	if err := c.WriteFile(ctx(t), file, nil, "", strings.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	rc, err := c.ReadFile(ctx(t), file, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(got) != body {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	if entries, _, err := c.ListDir(ctx(t), dir, "", 10); err != nil || len(entries) != 1 || entries[0].Name != canary {
		t.Fatalf("list: %+v, %v", entries, err)
	}
	c.Close()

	second := hub.open(t, true)
	if second.Generation() <= c.Generation() {
		t.Fatalf("generation %d after %d", second.Generation(), c.Generation())
	}
	if r := run(t, second, ExecSpec{Argv: []string{"echo", canary}}); r.stdout != canary+"\n" {
		t.Fatalf("second holder: %+v", r)
	}
	second.Close()
	assertCiphertext(t, log.bytes(), canary)
	if c.Rejected() != 0 || second.Rejected() != 0 {
		t.Fatalf("refused %d, %d frames of the keeper's own", c.Rejected(), second.Rejected())
	}

	mark := len(log.bytes())
	plain := hub.open(t, false)
	if plain.Sealed() {
		t.Fatal("a Conn that asked for no sealing says it is sealed")
	}
	if r := run(t, plain, ExecSpec{Argv: []string{"echo", canary}}); r.stdout != canary+"\n" {
		t.Fatalf("plaintext holder after sealed ones: %+v", r)
	}
	if !bytes.Contains(log.bytes()[mark:], []byte(canary)) {
		t.Fatal("a plaintext holder's frames are not plaintext: the recorder missed them")
	}
}

// assertCiphertext checks that log holds neither canary nor any frame
// but sealed ones and Fenced.
func assertCiphertext(t *testing.T, log []byte, canary string) {
	t.Helper()
	if bytes.Contains(log, []byte(canary)) {
		t.Fatal("the keeper's output holds the canary in plaintext")
	}
	fr := keeperproto.NewFrameReader(bytes.NewReader(log))
	sealed := 0
	for {
		f, err := fr.Next()
		if err != nil {
			break
		}
		switch f.Type {
		case keeperproto.ChanSealed:
			sealed++
		case keeperproto.ChanFenced:
		default:
			t.Fatalf("a plaintext frame %q on stream %d on the wire", f.Type, f.Stream)
		}
	}
	if fr.Skipped != 0 || sealed < 10 {
		t.Fatalf("%d sealed frames, %d bytes outside frames", sealed, fr.Skipped)
	}
}

// forger sits between the keeper's stdout and a sealed Conn and, before
// each sealed frame after the Welcome, sends three forgeries: the previous
// sealed frame again (a replay), this one with a bit of its ciphertext
// flipped (CRC made good again) and a plaintext stdout frame of the
// holder's generation on stream 1.
type forger struct {
	injected atomic.Int64
}

func (g *forger) run(src io.Reader, dst *io.PipeWriter) {
	fr := keeperproto.NewFrameReader(src)
	var prev []byte
	for {
		f, err := fr.Next()
		if err != nil {
			dst.CloseWithError(err)
			return
		}
		enc, _ := keeperproto.AppendFrame(nil, f)
		if f.Type == keeperproto.ChanSealed && prev != nil {
			tampered := f
			tampered.Payload = bytes.Clone(f.Payload)
			tampered.Payload[len(tampered.Payload)/2] ^= 0x10
			bad, _ := keeperproto.AppendFrame(nil, tampered)
			forged, _ := keeperproto.AppendFrame(nil, keeperproto.Frame{Type: keeperproto.ChanStdout, Stream: 1, Gen: f.Gen, Payload: []byte("FORGED\n")})
			g.injected.Add(3)
			if _, err := dst.Write(bytes.Join([][]byte{prev, bad, forged}, nil)); err != nil {
				return
			}
		}
		if f.Type == keeperproto.ChanSealed {
			prev = enc
		}
		if _, err := dst.Write(enc); err != nil {
			return
		}
	}
}

// A tampered, a replayed and a forged plaintext frame are never delivered:
// the exec's output and exit are exactly the keeper's, and each forgery is
// counted.
func TestSealedChannelRefusesForgedFrames(t *testing.T) {
	k := startStdio(t)
	pr, pw := io.Pipe()
	g := &forger{}
	done := make(chan struct{})
	go func() { defer close(done); g.run(k.out, pw) }()
	c, err := Open(ctx(t), pipeRW{Reader: pr, WriteCloser: k.stdin, rc: pr}, Options{Seal: true})
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, c, ExecSpec{Argv: []string{"sh", "-c", "echo one; echo two >&2; echo three; exit 4"}})
	if r.stdout != "one\nthree\n" || r.stderr != "two\n" || r.status.Code != 4 {
		t.Fatalf("got %+v", r)
	}
	// Every forgery went before a frame of the keeper's own, the Exit
	// included: all were read by now.
	if got, want := c.Rejected(), g.injected.Load(); got != want || want < 9 {
		t.Fatalf("refused %d frames, %d were forged", got, want)
	}
	if err := c.Err(); err != nil {
		t.Fatalf("the forgeries broke the channel: %v", err)
	}
	c.Close()
	_ = k.cmd.Process.Kill()
	<-done
}

// A keeper that answers a sealing Hello in plaintext (an older one) is
// refused: Open fails with ErrNotSealed.
func TestSealedOpenRefusesAPlaintextKeeper(t *testing.T) {
	toKeeper, fromClient := io.Pipe()
	fromKeeper, toClient := io.Pipe()
	go func() {
		f, err := keeperproto.NewFrameReader(toKeeper).Next()
		if err != nil {
			return
		}
		var hello keeperproto.Hello
		_ = json.Unmarshal(f.Payload, &hello)
		if hello.SealKey == "" {
			toClient.CloseWithError(errors.New("no seal key in the hello"))
			return
		}
		payload, _ := json.Marshal(keeperproto.Welcome{Version: keeperproto.ChanVersion, Nonce: hello.Nonce, Generation: 1})
		b, _ := keeperproto.AppendFrame(nil, keeperproto.Frame{Type: keeperproto.ChanWelcome, Gen: 1, Payload: payload})
		_, _ = toClient.Write(b)
		_, _ = io.Copy(io.Discard, toKeeper)
	}()
	rw := pipeRW{Reader: fromKeeper, WriteCloser: fromClient, rc: closers{fromKeeper, toKeeper}}
	_, err := Open(context.Background(), rw, Options{Seal: true, Lease: -1})
	if !errors.Is(err, ErrNotSealed) || !errors.Is(err, ErrBroken) {
		t.Fatalf("Open: %v, want ErrNotSealed", err)
	}
}

type closers []io.Closer

func (cs closers) Close() error {
	for _, c := range cs {
		_ = c.Close()
	}
	return nil
}

// Over Docker's attach stream, whose stdout every attacher reads and
// whose stdin merges every attacher's writes (a pod's attach behaves the
// same): a sealed holder's output reaches it whole, a second sealed
// holder with a key of its own takes over and fences the first, and the
// first, which reads the second's frames too, takes none of them.
func TestSandboxSealedTakeoverOverTwoAttaches(t *testing.T) {
	s, plain := openSandbox(t, 0)
	plain.Close()
	first, err := Open(ctx(t), s.attach(t), Options{Seal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if r := run(t, first, ExecSpec{Argv: []string{"echo", "first"}}); r.stdout != "first\n" {
		t.Fatalf("first holder: %+v", r)
	}
	second, err := Open(ctx(t), s.attach(t), Options{Seal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	<-first.Done()
	if !errors.Is(first.Err(), ErrFenced) {
		t.Fatalf("first holder: %v", first.Err())
	}
	if r := run(t, second, ExecSpec{Argv: []string{"echo", "second"}}); r.stdout != "second\n" || !second.Sealed() {
		t.Fatalf("second holder: %+v", r)
	}
	if first.Rejected() != 0 || second.Rejected() != 0 {
		t.Fatalf("refused %d, %d frames", first.Rejected(), second.Rejected())
	}
}
