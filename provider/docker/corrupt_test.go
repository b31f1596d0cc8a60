package docker

import (
	"encoding/binary"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"go.uber.org/zap/zaptest"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// fakeExecEngine answers exec inspects from a table the test sets: an
// exec runs until the test says it exited.
type fakeExecEngine struct {
	mu     sync.Mutex
	exited map[string]bool
}

func (e *fakeExecEngine) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/_ping") {
		w.Header().Set("Api-Version", "1.41")
		return
	}
	id, ok := strings.CutSuffix(r.URL.Path[strings.Index(r.URL.Path, "/exec/")+len("/exec/"):], "/json")
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	e.mu.Lock()
	done := e.exited[id]
	e.mu.Unlock()
	_ = json.NewEncoder(w).Encode(map[string]any{"ID": id, "Running": !done, "ExitCode": 0})
}

func (e *fakeExecEngine) exit(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.exited[id] = true
}

// fakeKeeper is the far end of one exec's hijacked connection: what the
// engine would send, and the control frames the provider sends back.
type fakeKeeper struct {
	conn   net.Conn
	frames chan byte
}

func (p *Provider) fakeExec(t *testing.T, execID string) (*process, *fakeKeeper) {
	ours, theirs := net.Pipe()
	t.Cleanup(func() { theirs.Close() })
	k := &fakeKeeper{conn: theirs, frames: make(chan byte, 16)}
	go func() {
		defer close(k.frames)
		for {
			typ, _, err := keeperproto.ReadFrame(theirs)
			if err != nil {
				return
			}
			k.frames <- typ
		}
	}()
	const sandbox = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	return newProcess(p, sandbox, execID, "0123456789abcdef01234567", client.NewHijackedResponse(ours, ""), false), k
}

// send writes one engine frame of the given stream type.
func (k *fakeKeeper) send(t *testing.T, stream byte, payload string) {
	t.Helper()
	hdr := make([]byte, frameHeaderLen, frameHeaderLen+len(payload))
	hdr[0] = stream
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(payload)))
	if _, err := k.conn.Write(append(hdr, payload...)); err != nil {
		t.Fatal(err)
	}
}

func TestACorruptedStreamEndsThatExecAtOnceWithATypedError(t *testing.T) {
	engine := &fakeExecEngine{exited: map[string]bool{}}
	sock := filepath.Join(t.TempDir(), "fake.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(engine.serve)}
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ln) }()
	p, err := newProvider(provider.Config{Logger: zaptest.NewLogger(t)}, client.WithHost("unix://"+sock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(); srv.Close(); <-served })

	bad, badKeeper := p.fakeExec(t, "bad")
	good, goodKeeper := p.fakeExec(t, "good")
	badOut := make(chan result, 1)
	go func() { badOut <- collect(bad) }()
	goodOut := make(chan result, 1)
	go func() { goodOut <- collect(good) }()

	badKeeper.send(t, engineStdout, "before\n")
	badKeeper.send(t, 9, "garbage") // no such stream
	var r result
	select {
	case r = <-badOut:
	case <-time.After(30 * time.Second):
		t.Fatal("an exec whose stream is corrupted did not end (its process runs on)")
	}
	if k := protocol.KindOf(r.err); k != protocol.KindTransient || !strings.Contains(r.err.Error(), "corrupted") || r.stdout != "before\n" {
		t.Fatalf("corrupted exec: %v (kind %q), stdout %q", r.err, k, r.stdout)
	}
	if typ := <-badKeeper.frames; typ != keeperproto.FrameKill {
		t.Fatalf("the keeper of the corrupted exec got frame %q, not a kill", typ)
	}

	// The other exec on the same provider goes on as if nothing happened.
	goodKeeper.send(t, engineStdout, "still here\n")
	goodKeeper.send(t, engineStderr, "and here\n")
	goodKeeper.conn.Close()
	engine.exit("good")
	g := <-goodOut
	if g.err != nil || g.status.Code != 0 || g.stdout != "still here\n" || g.stderr != "and here\n" {
		t.Fatalf("the other exec: %+v %v, stdout %q, stderr %q", g.status, g.err, g.stdout, g.stderr)
	}
	if typ, ok := <-goodKeeper.frames; ok {
		t.Fatalf("the other exec's keeper got frame %q", typ)
	}
}
