package docker

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/moby/moby/client"
)

// engineProxy stands between a provider and the real engine on a unix
// socket of its own, so a test can make the engine go away (down) or stop
// answering (frozen) and come back, without touching the shared engine.
type engineProxy struct {
	t        *testing.T
	sock     string
	upstream *client.Client

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
	frozen bool
	thaw   *sync.Cond
	// freezeAt, when set, freezes the engine at the first request that
	// matches it, that request included.
	freezeAt *regexp.Regexp
	wg       sync.WaitGroup
}

func startProxy(t *testing.T) *engineProxy {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	px := &engineProxy{t: t, sock: filepath.Join(t.TempDir(), "engine.sock"), upstream: cli, conns: map[net.Conn]bool{}}
	px.thaw = sync.NewCond(&px.mu)
	px.up()
	t.Cleanup(func() {
		px.setFrozen(false)
		px.down()
		px.wg.Wait()
		cli.Close()
	})
	return px
}

// host is the DOCKER_HOST of the proxy.
func (px *engineProxy) host() client.Opt { return client.WithHost("unix://" + px.sock) }

// up starts accepting again (after down).
func (px *engineProxy) up() {
	ln, err := net.Listen("unix", px.sock)
	if err != nil {
		px.t.Fatal(err)
	}
	px.mu.Lock()
	px.ln = ln
	px.mu.Unlock()
	px.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			px.wg.Go(func() { px.serve(c) })
		}
	})
}

// down is an engine that went away: every connection is cut and the
// socket is gone (connection refused).
func (px *engineProxy) down() {
	px.mu.Lock()
	defer px.mu.Unlock()
	if px.ln != nil {
		px.ln.Close()
		px.ln = nil
		os.Remove(px.sock)
	}
	for c := range px.conns {
		c.Close()
	}
}

// setFrozen makes the engine hang: connections stay open, nothing moves.
func (px *engineProxy) setFrozen(f bool) {
	px.mu.Lock()
	px.frozen = f
	px.mu.Unlock()
	px.thaw.Broadcast()
}

// freezeOn makes the engine hang from the first request matching pattern
// (say `POST /v[0-9.]+/containers/[0-9a-f]+/start`): the engine gets as far
// as the request before it, and never sees that one until setFrozen(false).
func (px *engineProxy) freezeOn(pattern string) {
	px.mu.Lock()
	px.freezeAt = regexp.MustCompile(pattern)
	px.mu.Unlock()
}

func (px *engineProxy) serve(c net.Conn) {
	up, err := px.upstream.Dialer()(px.t.Context())
	if err != nil {
		c.Close()
		return
	}
	px.mu.Lock()
	px.conns[c], px.conns[up] = true, true
	px.mu.Unlock()
	defer func() {
		px.mu.Lock()
		delete(px.conns, c)
		delete(px.conns, up)
		px.mu.Unlock()
		c.Close()
		up.Close()
	}()
	var wg sync.WaitGroup
	wg.Go(func() { px.pump(up, c, true); up.Close() })
	px.pump(c, up, false)
	c.Close()
	wg.Wait()
}

// pump copies src to dst, holding every chunk while frozen. requests: src
// is the provider's side, whose chunks freezeAt is matched against (a
// request's line and headers come in one write).
func (px *engineProxy) pump(dst io.Writer, src io.Reader, requests bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		px.mu.Lock()
		if requests && px.freezeAt != nil && px.freezeAt.Match(buf[:n]) {
			px.freezeAt, px.frozen = nil, true
		}
		for px.frozen {
			px.thaw.Wait()
		}
		px.mu.Unlock()
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// unauthorizedEngine answers every request with 401, as an engine behind
// an authenticating proxy does once the credentials expired.
func unauthorizedEngine(t *testing.T) client.Opt {
	sock := filepath.Join(t.TempDir(), "401.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"message":"token expired"}`)
	})}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return client.WithHost("unix://" + sock)
}
