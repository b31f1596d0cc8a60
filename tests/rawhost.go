package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/resident-dev/resident/internal/testhost"
	"github.com/resident-dev/resident/protocol"
)

// RawHost drives the real binary with no helper goroutines, so a test can
// stop reading, or close both pipes, exactly when it wants to.
type RawHost struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	frames *protocol.FrameReader
	stderr *strings.Builder
	early  map[string]map[string]json.RawMessage // responses read while awaiting another
}

func spawn(t *testing.T) *RawHost {
	t.Helper()
	return SpawnRaw(t, nil)
}

// SpawnRaw is spawn with extra flags and environment (env holds the
// variables after PATH).
func SpawnRaw(t *testing.T, args []string, env ...string) *RawHost {
	t.Helper()
	state := t.TempDir()
	t.Cleanup(func() { testhost.EndLocalInits(state) })
	cmd := exec.Command(ResidentBin, append([]string{"--state-dir", state}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h := &RawHost{t: t, cmd: cmd, stdin: stdin, stdout: stdout, frames: protocol.NewFrameReader(bufio.NewReader(stdout), 1<<30), stderr: &strings.Builder{}, early: map[string]map[string]json.RawMessage{}}
	cmd.Stderr = h.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return h
}

// Send writes one request with a numeric id and raw JSON params.
func (h *RawHost) Send(id int, method, params string) {
	h.t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
	if _, err := h.stdin.Write(protocol.AppendFrame(nil, []byte(body))); err != nil {
		h.t.Fatal(err)
	}
}

// await reads frames until the response to id, skipping notifications.
func (h *RawHost) Await(id int) map[string]json.RawMessage {
	h.t.Helper()
	if m, ok := h.early[strconv.Itoa(id)]; ok {
		return m
	}
	for {
		body, err := h.frames.Read()
		if err != nil {
			h.t.Fatalf("reading: %v\n%s", err, h.stderr.String())
		}
		if bytes.HasPrefix(body, []byte(`{"jsonrpc":"2.0","method"`)) {
			continue // a notification; decoding megabytes of them is the test's cost, not the resident's
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			h.t.Fatal(err)
		}
		if _, isNote := m["method"]; isNote {
			continue
		}
		if string(m["id"]) == strconv.Itoa(id) {
			return m
		}
		h.early[string(m["id"])] = m
	}
}

func (h *RawHost) sandbox() string {
	h.Send(1, "initialize", `{"protocol_version":1,"install_id":"raw"}`)
	h.Await(1)
	h.Send(2, "sandbox/create", `{}`)
	var res protocol.CreateResult
	_ = json.Unmarshal(h.Await(2)["result"], &res)
	return res.SandboxID
}

// Kill SIGKILLs the resident and waits for it.
func (h *RawHost) Kill() {
	_ = h.cmd.Process.Kill()
	_ = h.cmd.Wait()
}

// ReadFrame reads the next frame the resident wrote, whatever it is.
func (h *RawHost) ReadFrame() ([]byte, error) { return h.frames.Read() }
