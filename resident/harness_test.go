package resident

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/internal/testhost"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// host is the test's side of a session over in-memory pipes: it writes
// frames, and a reader goroutine sorts what comes back into responses by id
// and notifications in arrival order.
type host struct {
	t      *testing.T
	toRes  *io.PipeWriter
	raw    *bytes.Buffer // every byte the resident wrote, for canary greps
	logs   *syncBuffer
	done   chan error
	nextID int

	mu        sync.Mutex
	cond      *sync.Cond
	responses map[string]message
	notes     []message
	readErr   error
}

type message = testhost.Message

type syncBuffer = testhost.SyncBuffer

type pipeRWC struct {
	io.Reader
	io.Writer
	closers []io.Closer
}

func (p pipeRWC) Close() error {
	for _, c := range p.closers {
		_ = c.Close()
	}
	return nil
}

// startHost runs Serve on prov with debug logs captured (scrubbed as the
// command scrubs them).
func startHost(t *testing.T, prov provider.Provider, tweak ...func(*Options)) *host {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	scrubber := hardening.New()
	logs := &syncBuffer{}
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()),
		zapcore.AddSync(scrubWriter{logs, scrubber}), zapcore.DebugLevel)
	opts := Options{Provider: prov, Scrubber: scrubber, Logger: zap.New(core), GracePeriod: 2 * time.Second}
	for _, f := range tweak {
		f(&opts)
	}
	h := &host{t: t, toRes: inW, raw: &bytes.Buffer{}, logs: logs, done: make(chan error, 1), responses: map[string]message{}}
	h.cond = sync.NewCond(&h.mu)
	go func() {
		h.done <- Serve(context.Background(), pipeRWC{Reader: inR, Writer: outW, closers: []io.Closer{inR, outW}}, opts)
	}()
	go h.readLoop(outR)
	t.Cleanup(func() {
		_ = inW.Close()
		select {
		case <-h.done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after stdin closed")
		}
	})
	return h
}

type scrubWriter struct {
	w io.Writer
	s *hardening.Scrubber
}

func (s scrubWriter) Write(p []byte) (int, error) {
	_, err := s.w.Write(s.s.Scrub(p))
	return len(p), err
}

func (h *host) readLoop(r io.Reader) {
	tee := io.TeeReader(r, lockedWriter{h})
	fr := protocol.NewFrameReader(tee, 1<<30)
	for {
		body, err := fr.Read()
		h.mu.Lock()
		if err != nil {
			h.readErr = err
			h.cond.Broadcast()
			h.mu.Unlock()
			return
		}
		var m message
		if jerr := json.Unmarshal(body, &m); jerr != nil {
			h.readErr = fmt.Errorf("resident wrote invalid JSON %q: %w", body, jerr)
		} else if m.Method != "" {
			h.notes = append(h.notes, m)
		} else {
			h.responses[string(m.ID)] = m
		}
		h.cond.Broadcast()
		h.mu.Unlock()
	}
}

type lockedWriter struct{ h *host }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	return w.h.raw.Write(p)
}

func (h *host) sendRaw(body string) {
	h.t.Helper()
	if _, err := h.toRes.Write(protocol.AppendFrame(nil, []byte(body))); err != nil {
		h.t.Fatalf("write frame: %v", err)
	}
}

// send writes a request and returns its id.
func (h *host) send(method string, params any) string {
	h.t.Helper()
	h.nextID++
	id := fmt.Sprint(h.nextID)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": h.nextID, "method": method, "params": params})
	if err != nil {
		h.t.Fatal(err)
	}
	h.sendRaw(string(body))
	return id
}

func (h *host) notify(method string, params any) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	h.sendRaw(string(body))
}

// await blocks until the response to id arrives.
func (h *host) await(id string) message {
	h.t.Helper()
	deadline := time.AfterFunc(60*time.Second, func() {
		h.mu.Lock()
		h.readErr = fmt.Errorf("no response to %s within 60s", id)
		h.cond.Broadcast()
		h.mu.Unlock()
	})
	defer deadline.Stop()
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		if m, ok := h.responses[id]; ok {
			return m
		}
		if h.readErr != nil {
			h.t.Fatalf("awaiting response %s: %v", id, h.readErr)
		}
		h.cond.Wait()
	}
}

// call sends a request and decodes a successful result into out.
func (h *host) call(method string, params, out any) {
	h.t.Helper()
	m := h.await(h.send(method, params))
	if m.Error != nil {
		h.t.Fatalf("%s: unexpected error %d %s: %s", method, m.Error.Code, m.Error.Data.Kind, m.Error.Message)
	}
	if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			h.t.Fatalf("%s: decode result %s: %v", method, m.Result, err)
		}
	}
}

// callErr sends a request that must fail with kind and returns the error message.
func (h *host) callErr(method string, params any, kind protocol.Kind) string {
	h.t.Helper()
	m := h.await(h.send(method, params))
	if m.Error == nil {
		h.t.Fatalf("%s: expected %s error, got result %s", method, kind, m.Result)
	}
	if m.Error.Data.Kind != kind {
		h.t.Fatalf("%s: expected kind %s, got %s (%d): %s", method, kind, m.Error.Data.Kind, m.Error.Code, m.Error.Message)
	}
	return m.Error.Message
}

func (h *host) initialize(extra map[string]any) protocol.InitializeResult {
	h.t.Helper()
	params := map[string]any{"protocol_version": 1, "install_id": "test-install"}
	for k, v := range extra {
		params[k] = v
	}
	var res protocol.InitializeResult
	h.call(protocol.MethodInitialize, params, &res)
	return res
}

// output concatenates the exec/output data of one exec stream.
func (h *host) output(execID, stream string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out strings.Builder
	for _, n := range h.notes {
		if n.Method != protocol.NotifyExecOutput {
			continue
		}
		var o protocol.ExecOutput
		if err := json.Unmarshal(n.Params, &o); err == nil && o.ExecID == execID && o.Stream == stream {
			out.Write(o.Data)
		}
	}
	return out.String()
}

func (h *host) notifications(method string) []message {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []message
	for _, n := range h.notes {
		if n.Method == method {
			out = append(out, n)
		}
	}
	return out
}

func (h *host) rawOutput() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.raw.String()
}

// waitFor polls cond until it holds (no fixed sleeps in assertions).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
