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

// LiveHost drives the real binary like a host library would: a reader
// goroutine parses every frame (a frame that does not parse as one JSON
// object is a test failure: frames must never interleave), sorts responses
// by id and keeps the decoded output of every exec stream.
type LiveHost struct {
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
	responses map[string]LiveMsg
	output    map[string][]byte // exec_id/stream -> decoded bytes (or only counted)
	counted   map[string]int64  // exec_id/stream -> decoded byte count
	frames    int
	badFrame  error
	readErr   error
}

// LiveMsg is one message the resident sent.
type LiveMsg = testhost.Message

// LiveOpts say how SpawnLive runs the binary.
type LiveOpts struct {
	Args    []string // resident flags after --state-dir
	Env     []string // on top of PATH
	KeepRaw bool     // keep every stdout byte (canary greps)
	KeepOut bool     // keep decoded exec output, not just its length
	State   string   // --state-dir; a fresh temporary directory when empty
	Bin     string   // the resident binary; ResidentBin when empty
}

// SpawnLive starts the binary as a host would, stopped when t ends.
func SpawnLive(t *testing.T, o LiveOpts) *LiveHost {
	t.Helper()
	if o.State == "" {
		o.State = t.TempDir()
	}
	state := o.State
	t.Cleanup(func() { testhost.EndLocalInits(state) }) // last: after the resident stopped
	if o.Bin == "" {
		o.Bin = ResidentBin
	}
	args := append([]string{"--state-dir", o.State}, o.Args...)
	cmd := exec.Command(o.Bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, o.Env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h := &LiveHost{t: t, cmd: cmd, stdin: stdin, stderr: &lockedBuffer{}, exited: make(chan struct{}),
		responses: map[string]LiveMsg{}, output: map[string][]byte{}, counted: map[string]int64{}}
	if o.KeepRaw {
		h.raw = &bytes.Buffer{}
	}
	h.cond = sync.NewCond(&h.mu)
	cmd.Stderr = h.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go h.readLoop(stdout, o.KeepOut)
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
			t.Logf("resident stderr (tail):\n%s", Tail(h.stderr.String(), 4000))
		}
	})
	return h
}

// Tail is the last n bytes of s, for failure logs.
func Tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

type rawTee struct{ h *LiveHost }

func (w rawTee) Write(p []byte) (int, error) {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	w.h.raw.Write(p)
	return len(p), nil
}

func (h *LiveHost) readLoop(r io.Reader, keepOut bool) {
	if h.raw != nil {
		r = io.TeeReader(r, rawTee{h})
	}
	fr := protocol.NewFrameReader(r, 1<<30)
	for {
		body, err := fr.Read()
		var m LiveMsg
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
func (h *LiveHost) Send(method string, params any) string {
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
func (h *LiveHost) SendQuiet(method string, params any) string {
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	h.nextID++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": h.nextID, "method": method, "params": params})
	_, _ = h.stdin.Write(protocol.AppendFrame(nil, body))
	return strconv.Itoa(h.nextID)
}

// Notify sends a notification.
func (h *LiveHost) Notify(method string, params any) {
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	_, _ = h.stdin.Write(protocol.AppendFrame(nil, body))
}

// WriteRaw writes b to the resident's stdin as is.
func (h *LiveHost) WriteRaw(b []byte) {
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	if _, err := h.stdin.Write(b); err != nil {
		h.t.Errorf("raw write: %v", err)
	}
}

// await waits for the response to id, at most limit.
func (h *LiveHost) AwaitWithin(id string, limit time.Duration) (LiveMsg, bool) {
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
			return LiveMsg{}, false
		}
		h.cond.Wait()
	}
}

// Await waits for the response to request id (failing t after a long bound).
func (h *LiveHost) Await(id string) LiveMsg {
	h.t.Helper()
	m, ok := h.AwaitWithin(id, 120*time.Second)
	if !ok {
		h.mu.Lock()
		err := h.readErr
		h.mu.Unlock()
		h.t.Fatalf("no response to request %s (read error: %v)", id, err)
	}
	return m
}

// call sends and waits for a result, decoding it into out.
func (h *LiveHost) Call(method string, params, out any) {
	h.t.Helper()
	m := h.Await(h.Send(method, params))
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
func (h *LiveHost) CallErr(method string, params any, kind protocol.Kind) string {
	h.t.Helper()
	m := h.Await(h.Send(method, params))
	if m.Error == nil || m.Error.Data.Kind != kind {
		h.t.Fatalf("%s: want a %s error, got %s %+v", method, kind, m.Result, m.Error)
	}
	return m.Error.Message
}

// Init sends initialize with installID (and extra params) and fails t on an error.
func (h *LiveHost) Init(installID string, extra map[string]any) protocol.InitializeResult {
	h.t.Helper()
	params := map[string]any{"protocol_version": 1, "install_id": installID}
	for k, v := range extra {
		params[k] = v
	}
	var res protocol.InitializeResult
	h.Call(protocol.MethodInitialize, params, &res)
	return res
}

// Create makes a sandbox of spec and returns its id, failing t on an error.
func (h *LiveHost) Create(spec map[string]any) string {
	h.t.Helper()
	var res protocol.CreateResult
	h.Call(protocol.MethodSandboxCreate, map[string]any{"spec": spec}, &res)
	h.t.Cleanup(func() {
		select {
		case <-h.exited:
		default: // best effort: the session may be ending
			_, _ = h.AwaitWithin(h.SendQuiet(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": res.SandboxID}), 60*time.Second)
		}
	})
	return res.SandboxID
}

// Out is the decoded output of an exec stream so far (KeepOut).
func (h *LiveHost) Out(execID, stream string) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return bytes.Clone(h.output[execID+"/"+stream])
}

// OutLen is how many decoded bytes an exec stream has sent so far.
func (h *LiveHost) OutLen(execID, stream string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counted[execID+"/"+stream]
}

// RawStdout is every byte the resident wrote on stdout (KeepRaw).
func (h *LiveHost) RawStdout() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.raw.String()
}

// waitExit closes stdin and waits for the process to end.
func (h *LiveHost) CloseAndWait(limit time.Duration) {
	h.t.Helper()
	_ = h.stdin.Close()
	select {
	case <-h.exited:
	case <-time.After(limit):
		h.t.Fatalf("resident still running %s after stdin closed", limit)
	}
}

// OpenFDs counts the descriptors a process holds.
func OpenFDs(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// Threads is the number of threads of process pid.
func Threads(t *testing.T, pid int) int {
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

// WaitUntil polls cond until it holds, failing t (naming what) after a long bound.
func WaitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Process is the resident's process.
func (h *LiveHost) Process() *os.Process { return h.cmd.Process }

// Stderr is what the resident has logged so far.
func (h *LiveHost) Stderr() string { return h.stderr.String() }

// Exited is closed when the resident has exited.
func (h *LiveHost) Exited() <-chan struct{} { return h.exited }
