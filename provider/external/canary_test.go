package external

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// TestProviderStderrIsScrubbed: a provider that prints the credentials it
// was given on its stderr, plain and inside a JSON log line, leaks them
// into no output of the real resident: its log (stderr) and its frames.
func TestProviderStderrIsScrubbed(t *testing.T) {
	const canary = "canary-provider-stderr-5d1e9f"
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	res := exec.Command(residentBin(t), "--provider", "external", "--log-level", "debug", "--", self, "-test.run=^$")
	res.Env = append(os.Environ(), fakeEnv+"=echo-creds", "RESIDENT_EXTERNAL_FAKE_STATE="+t.TempDir())
	stdin, err := res.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := res.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	res.Stderr = &stderr
	if err := res.Start(); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": protocol.MethodInitialize,
		"params": map[string]any{"protocol_version": 1, "install_id": "canary", "credentials": map[string]string{"api_token": canary}}})
	fmt.Fprintf(stdin, "Content-Length: %d\r\n\r\n%s", len(body), body)
	frame, err := protocol.NewFrameReader(out, 1<<20).Read()
	if err != nil || !strings.Contains(string(frame), `"result"`) {
		t.Fatalf("initialize did not answer: %s %v", frame, err)
	}
	_ = stdin.Close() // a clean end: the resident stops its provider, then exits
	rest, _ := io.ReadAll(out)
	_ = res.Wait()
	stdout := string(frame) + string(rest)
	if !strings.Contains(stderr.String(), `"logger":"provider.local"`) || !strings.Contains(stderr.String(), "applying credential api_token=[REDACTED]") {
		t.Fatalf("the provider's stderr line did not reach the log, masked:\n%s", stderr.String())
	}
	for name, out := range map[string]string{"stdout": stdout, "stderr": stderr.String()} {
		if strings.Contains(out, canary) {
			t.Errorf("the canary reached the resident's %s", name)
		}
	}
}

// TestCredentialPartsCrossTheProtocol: the secrets a provider finds inside
// a credential (a Docker config's decoded auth) reach the parent's scrubber.
func TestCredentialPartsCrossTheProtocol(t *testing.T) {
	p, err := openFake(t, "none", DefaultCallTimeout, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := p.(provider.CredentialSecrets).CredentialSecrets("k", "v")
	if len(got) != 1 || got[0] != "k:v-derived" {
		t.Fatalf("CredentialSecrets over the wire = %q", got)
	}
}
