package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resident-dev/resident/internal/testhost"
	"github.com/resident-dev/resident/protocol"
)

// liveHost drives the real binary like a host library would: a reader
// goroutine parses every frame (a frame that does not parse as one JSON
// object is a test failure: frames must never interleave), sorts responses
// by id and keeps the decoded output of every exec stream.
type liveHost struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *lockedBuffer
	exited chan struct{}

	writeMu sync.Mutex
	nextID  int

	mu        sync.Mutex
	cond      *sync.Cond
	raw       *bytes.Buffer // every byte of stdout; nil unless keepRaw
	responses map[string]liveMsg
	output    map[string][]byte // exec_id/stream -> decoded bytes (or only counted)
	counted   map[string]int64  // exec_id/stream -> decoded byte count
	frames    int
	badFrame  error
	readErr   error
}

type liveMsg = testhost.Message

type liveOpts struct {
	args    []string // resident flags after --state-dir
	env     []string // on top of PATH
	keepRaw bool     // keep every stdout byte (canary greps)
	keepOut bool     // keep decoded exec output, not just its length
	state   string   // --state-dir; a fresh temporary directory when empty
	bin     string   // the resident binary; residentBin when empty
}

func spawnLive(t *testing.T, o liveOpts) *liveHost {
	t.Helper()
	if o.state == "" {
		o.state = t.TempDir()
	}
	if o.bin == "" {
		o.bin = residentBin
	}
	args := append([]string{"--state-dir", o.state}, o.args...)
	cmd := exec.Command(o.bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, o.env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h := &liveHost{t: t, cmd: cmd, stdin: stdin, stderr: &lockedBuffer{}, exited: make(chan struct{}),
		responses: map[string]liveMsg{}, output: map[string][]byte{}, counted: map[string]int64{}}
	if o.keepRaw {
		h.raw = &bytes.Buffer{}
	}
	h.cond = sync.NewCond(&h.mu)
	cmd.Stderr = h.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go h.readLoop(stdout, o.keepOut)
	go func() { _ = cmd.Wait(); close(h.exited) }()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-h.exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-h.exited
		}
		if h.badFrame != nil {
			t.Errorf("the resident wrote a frame that does not parse: %v", h.badFrame)
		}
		if t.Failed() {
			t.Logf("resident stderr (tail):\n%s", tail(h.stderr.String(), 4000))
		}
	})
	return h
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

type rawTee struct{ h *liveHost }

func (w rawTee) Write(p []byte) (int, error) {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	w.h.raw.Write(p)
	return len(p), nil
}

func (h *liveHost) readLoop(r io.Reader, keepOut bool) {
	if h.raw != nil {
		r = io.TeeReader(r, rawTee{h})
	}
	fr := protocol.NewFrameReader(r, 1<<30)
	for {
		body, err := fr.Read()
		var m liveMsg
		var jerr error
		if err == nil {
			jerr = json.Unmarshal(body, &m)
		}
		h.mu.Lock()
		switch {
		case err != nil:
			h.readErr = err
		case jerr != nil:
			if h.badFrame == nil {
				h.badFrame = fmt.Errorf("%v: %.200q", jerr, body)
			}
		case m.Method == protocol.NotifyExecOutput:
			var o protocol.ExecOutput
			if uerr := json.Unmarshal(m.Params, &o); uerr != nil && h.badFrame == nil {
				h.badFrame = fmt.Errorf("exec/output params: %v", uerr)
			}
			key := o.ExecID + "/" + o.Stream
			h.counted[key] += int64(len(o.Data))
			if keepOut {
				h.output[key] = append(h.output[key], o.Data...)
			}
		case m.Method != "":
		default:
			h.responses[string(m.ID)] = m
		}
		h.frames++
		h.cond.Broadcast()
		h.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// send writes one request without waiting and returns its id.
func (h *liveHost) send(method string, params any) string {
	h.t.Helper()
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	h.nextID++
	id := h.nextID
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.stdin.Write(protocol.AppendFrame(nil, body)); err != nil {
		h.t.Errorf("write %s: %v", method, err)
	}
	return strconv.Itoa(id)
}

// sendQuiet is send for cleanups: a write error is not a failure.
func (h *liveHost) sendQuiet(method string, params any) string {
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	h.nextID++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": h.nextID, "method": method, "params": params})
	_, _ = h.stdin.Write(protocol.AppendFrame(nil, body))
	return strconv.Itoa(h.nextID)
}

func (h *liveHost) notify(method string, params any) {
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	_, _ = h.stdin.Write(protocol.AppendFrame(nil, body))
}

func (h *liveHost) writeRaw(b []byte) {
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	if _, err := h.stdin.Write(b); err != nil {
		h.t.Errorf("raw write: %v", err)
	}
}

// await waits for the response to id, at most limit.
func (h *liveHost) awaitWithin(id string, limit time.Duration) (liveMsg, bool) {
	timer := time.AfterFunc(limit, func() {
		h.mu.Lock()
		h.cond.Broadcast()
		h.mu.Unlock()
	})
	defer timer.Stop()
	deadline := time.Now().Add(limit)
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		if m, ok := h.responses[id]; ok {
			return m, true
		}
		if h.readErr != nil || time.Now().After(deadline) {
			return liveMsg{}, false
		}
		h.cond.Wait()
	}
}

func (h *liveHost) await(id string) liveMsg {
	h.t.Helper()
	m, ok := h.awaitWithin(id, 120*time.Second)
	if !ok {
		h.mu.Lock()
		err := h.readErr
		h.mu.Unlock()
		h.t.Fatalf("no response to request %s (read error: %v)", id, err)
	}
	return m
}

// call sends and waits for a result, decoding it into out.
func (h *liveHost) call(method string, params, out any) {
	h.t.Helper()
	m := h.await(h.send(method, params))
	if m.Error != nil {
		h.t.Fatalf("%s: %s (%d): %s", method, m.Error.Data.Kind, m.Error.Code, m.Error.Message)
	}
	if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			h.t.Fatalf("%s result %s: %v", method, m.Result, err)
		}
	}
}

// callErr sends a request that must fail with kind; it returns the message.
func (h *liveHost) callErr(method string, params any, kind protocol.Kind) string {
	h.t.Helper()
	m := h.await(h.send(method, params))
	if m.Error == nil || m.Error.Data.Kind != kind {
		h.t.Fatalf("%s: want a %s error, got %s %+v", method, kind, m.Result, m.Error)
	}
	return m.Error.Message
}

func (h *liveHost) init(installID string, extra map[string]any) protocol.InitializeResult {
	h.t.Helper()
	params := map[string]any{"protocol_version": 1, "install_id": installID}
	for k, v := range extra {
		params[k] = v
	}
	var res protocol.InitializeResult
	h.call(protocol.MethodInitialize, params, &res)
	return res
}

func (h *liveHost) create(spec map[string]any) string {
	h.t.Helper()
	var res protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, map[string]any{"spec": spec}, &res)
	h.t.Cleanup(func() {
		select {
		case <-h.exited:
		default: // best effort: the session may be ending
			_, _ = h.awaitWithin(h.sendQuiet(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": res.SandboxID}), 60*time.Second)
		}
	})
	return res.SandboxID
}

func (h *liveHost) out(execID, stream string) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return bytes.Clone(h.output[execID+"/"+stream])
}

func (h *liveHost) outLen(execID, stream string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counted[execID+"/"+stream]
}

func (h *liveHost) rawStdout() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.raw.String()
}

// waitExit closes stdin and waits for the process to end.
func (h *liveHost) closeAndWait(limit time.Duration) {
	h.t.Helper()
	_ = h.stdin.Close()
	select {
	case <-h.exited:
	case <-time.After(limit):
		h.t.Fatalf("resident still running %s after stdin closed", limit)
	}
}

// openFDs counts the descriptors a process holds.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

func threads(t *testing.T, pid int) int {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(rest))
			return n
		}
	}
	return 0
}
