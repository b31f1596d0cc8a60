package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFramesFlagPrintsEveryFrame: with --frames the demo prints each frame's
// body as the host sends it (→) and receives it (←), as the README says,
// and without it prints none.
func TestFramesFlagPrintsEveryFrame(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "resident")
	build := exec.Command("go", "build", "-o", bin, "../resident")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run([]string{"--resident", bin, "--state-dir", t.TempDir(), "--frames"}, &out); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	var sent, received []string
	for _, line := range strings.Split(out.String(), "\n") {
		arrow, body, ok := strings.Cut(strings.TrimSpace(line), " ")
		switch {
		case !ok:
		case arrow == "→":
			sent = append(sent, body)
		case arrow == "←":
			received = append(received, body)
		default:
			continue
		}
		if ok && (arrow == "→" || arrow == "←") && !json.Valid([]byte(body)) {
			t.Errorf("printed frame is not its JSON body: %q", line)
		}
	}
	if len(sent) == 0 || !strings.HasPrefix(sent[0], `{"id":1,"jsonrpc":"2.0","method":"initialize"`) {
		t.Fatalf("first frame sent: %q, want the initialize request (output:\n%s)", sent, out.String())
	}
	joined := strings.Join(received, "\n")
	for _, want := range []string{`{"id":1,"result":{`, `"method":"exec/output"`, `"existed":true`, `"existed":false`} {
		if !strings.Contains(joined, want) {
			t.Errorf("no frame received holds %s", want)
		}
	}
	if strings.Contains(joined, "demo-secret-0a1b2c3d4e") {
		t.Error("a received frame carries the credential: frames must be printed as received, scrubbed")
	}

	out.Reset()
	if err := run([]string{"--resident", bin, "--state-dir", t.TempDir()}, &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "→") || strings.Contains(out.String(), "←") {
		t.Errorf("frames printed without --frames:\n%s", out.String())
	}
}
