package tests

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
)

// Frames at the limit, against the real binary: bodies of exactly
// max_frame_bytes that are not JSON are answered (-32700, null id) and the
// session goes on; the resident's memory stays bounded by the frame limit
// plus a constant however many arrive (RSS measured, race build included).
func TestFramesAtTheLimitKeepMemoryBounded(t *testing.T) {
	h := SpawnLive(t, LiveOpts{})
	limits := h.Init("frames", nil).Limits
	base := rssKiB(t, h.cmd.Process.Pid)
	body := bytes.Repeat([]byte("x"), int(limits.MaxFrameBytes))
	var rss []int
	const frames = 16
	for range frames {
		h.WriteRaw(protocol.AppendFrame(nil, body))
		h.Call(protocol.MethodSandboxList, nil, nil) // answered after the bad frame: the session goes on
		rss = append(rss, rssKiB(t, h.cmd.Process.Pid))
	}
	t.Logf("RSS %d KiB before, then %v KiB after each of %d frames at the %d byte limit", base, rss, frames, limits.MaxFrameBytes)
	// Memory plateaus: the last twelve frames cost less than four frames
	// more than the first four, where keeping them would cost twelve (a
	// few times that race-built: heap has shadow memory). The slack is
	// the garbage collector's pacing: a plateau can step up by about
	// three frames when a collection comes late (CI saw 48 MB between
	// frame 4 and 8 with nothing kept).
	if grow := rss[frames-1] - rss[3]; grow > 4*int(limits.MaxFrameBytes)/1024 {
		t.Fatalf("RSS grew %d KiB between frame 4 and frame %d: frames are being kept", grow, frames)
	}
	if rss[frames-1] > 384<<10 {
		t.Fatalf("RSS %d KiB after %d frames at the limit", rss[frames-1], frames)
	}
	h.mu.Lock()
	nullAnswer, ok := h.responses["null"]
	h.mu.Unlock()
	if !ok || nullAnswer.Error == nil || nullAnswer.Error.Code != protocol.CodeParseError {
		t.Fatalf("a frame of non-JSON is answered with a -32700 null-id error: %+v", nullAnswer)
	}
}

// The stream ends inside a body (the host died mid-frame): the resident
// answers with a null-id -32700 frame error and exits 2. Unknown
// notifications before it are ignored without an answer.
func TestTruncatedBodyThenEOF(t *testing.T) {
	for _, cut := range []int{0, 1, 30} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			h := SpawnLive(t, LiveOpts{KeepRaw: true})
			h.Init("trunc", nil)
			h.Notify("$/unknown", map[string]any{"x": 1})
			h.Notify("exec/output", map[string]any{"exec_id": "spoof"})
			h.Notify("initialize", map[string]any{"protocol_version": 1})
			h.Call(protocol.MethodSandboxList, nil, nil)
			body := `{"jsonrpc":"2.0","id":9,"method":"sandbox/list_owned","params":{}}`
			h.WriteRaw([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body[:cut])))
			_ = h.stdin.Close()
			select {
			case <-h.exited:
			case <-time.After(20 * time.Second):
				t.Fatal("the resident did not exit after a truncated body")
			}
			if code := h.cmd.ProcessState.ExitCode(); code != 2 {
				t.Fatalf("exit code %d, want 2", code)
			}
			m, ok := h.AwaitWithin("null", time.Second)
			if !ok || m.Error == nil || m.Error.Code != protocol.CodeParseError || !strings.Contains(m.Error.Message, "frame") {
				t.Fatalf("want a null-id -32700 frame error, got %+v", m.Error)
			}
			if n := strings.Count(h.RawStdout(), "Content-Length:"); n != 3 {
				t.Fatalf("%d frames written: notifications must not be answered", n)
			}
		})
	}
}
