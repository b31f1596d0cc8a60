package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestIDEClient runs tests/ide/session.js: a VS Code style client
// (vscode-jsonrpc, the version pinned in tests/ide/package-lock.json)
// driving the race-built resident through initialize, create, exec with
// streamed output and stdin, cancel, list_owned, terminate and shutdown.
// Without node it skips, except under CI=true, where it fails.
func TestIDEClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		needTool(t, "node")
	}
	dir, err := filepath.Abs("ide")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "vscode-jsonrpc", "package.json")); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			needTool(t, "npm")
		}
		install := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
		install.Dir = dir
		if out, err := install.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in tests/ide: %v\n%s", err, out)
		}
	}
	run := exec.CommandContext(ctx, node, "session.js", ResidentBin)
	run.Dir = dir
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("tests/ide/session.js: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

func needTool(t *testing.T, name string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required under CI=true for the IDE client proof (tests/ide)", name)
	}
	t.Skipf("%s not installed: skipping the IDE client proof (tests/ide)", name)
}
