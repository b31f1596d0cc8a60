package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
)

func keptSandbox(t *testing.T, state string, flags ...string) string {
	t.Helper()
	r := ctl(t, state, nil, append(append([]string{"run", "--keep"}, flags...), "--", "true")...)
	r.want(t, 0, "")
	return strings.TrimSpace(strings.TrimPrefix(string(r.stderr), "residentctl: kept sandbox "))
}

func TestHelpGoesToStdout(t *testing.T) {
	state := t.TempDir()
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"run", "--help"}, {"cp", "-h"}} {
		r := ctl(t, state, nil, args...)
		if r.code != 0 || !strings.Contains(string(r.stdout), "usage") || len(r.stderr) != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	if r := ctl(t, state, nil, "run", "--no-such-flag"); r.code != exitUsage || len(r.stdout) != 0 {
		t.Errorf("a bad flag: exit %d, stdout %q", r.code, r.stdout)
	}
}

// A program that cannot start exits as a shell says: 127 missing, 126 not
// executable.
func TestMissingAndNonExecutableProgramsExitAsAShell(t *testing.T) {
	state := t.TempDir()
	id := keptSandbox(t, state)
	ctl(t, state, nil, "exec", id, "--", "no-such-program-xyz").want(t, 127, "")
	ctl(t, state, []byte("echo hi\n"), "cp", "-", id+":plain.sh").want(t, 0, "")
	r := ctl(t, state, nil, "exec", id, "--", "./plain.sh")
	r.want(t, 126, "")
	if !strings.Contains(string(r.stderr), "plain.sh") {
		t.Fatalf("stderr %q does not name the program", r.stderr)
	}
	ctl(t, state, nil, "rm", id).want(t, 0, id+"\n")
}

func TestIDPrefixes(t *testing.T) {
	state := t.TempDir()
	a, b := keptSandbox(t, state), keptSandbox(t, state)
	common := 0
	for common < len(a) && a[common] == b[common] {
		common++
	}
	ctl(t, state, nil, "exec", a[:common+1], "--", "echo", "by prefix").want(t, 0, "by prefix\n")
	r := ctl(t, state, nil, "exec", a[:common], "--", "true")
	r.want(t, 125, "")
	if !strings.Contains(string(r.stderr), a) || !strings.Contains(string(r.stderr), b) {
		t.Fatalf("an ambiguous prefix must name the candidates: %s", r.stderr)
	}
	ctl(t, state, nil, "rm", "--all").want(t, 0, "*")
	ctl(t, state, nil, "ls", "--json").want(t, 0, "[]\n")
}

func TestCpBothWaysWithDirectories(t *testing.T) {
	state := t.TempDir()
	id := keptSandbox(t, state)
	src := t.TempDir()
	big := make([]byte, 12<<20+7) // over max_file_bytes: streamed
	_, _ = rand.Read(big)
	files := map[string][]byte{"a.txt": []byte("alpha\n"), "sub/b.bin": {0, 0xff, 1}, "sub/deeper/big.bin": big}
	for name, data := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	ctl(t, state, nil, "cp", src, id+":tree").want(t, 0, "")
	ctl(t, state, nil, "exec", id, "--", "stat", "-c", "%a", "tree/a.txt").want(t, 0, "640\n")
	out := filepath.Join(t.TempDir(), "back")
	ctl(t, state, nil, "cp", id+":tree", out).want(t, 0, "")
	for name, data := range files {
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s came back as %d bytes (%v), want %d", name, len(got), err, len(data))
		}
	}
	ctl(t, state, nil, "cp", id+":tree/a.txt", "-").want(t, 0, "alpha\n")
	r := ctl(t, state, nil, "cp", id+":nope", out)
	if r.code != exitFailure || !strings.Contains(string(r.stderr), "not_found") {
		t.Fatalf("cp of a missing file: %d %s", r.code, r.stderr)
	}
	ctl(t, state, nil, "rm", id).want(t, 0, id+"\n")
}

func TestRunSpecFlags(t *testing.T) {
	state := t.TempDir()
	id := keptSandbox(t, state, "--workdir", "/wd", "--tag", "team=blue", "--lifetime", "1h", "--pids", "64")
	var boxes []protocol.Sandbox
	if r := ctl(t, state, nil, "ls", "--json"); json.Unmarshal(r.stdout, &boxes) != nil || len(boxes) != 1 || boxes[0].Tags["team"] != "blue" {
		t.Fatalf("ls --json: %s", r.stdout)
	}
	ctl(t, state, nil, "exec", id, "--", "sh", "-c", "pwd").want(t, 0, "/wd\n")
	r := ctl(t, state, nil, "run", "--user", "nobody", "--", "true")
	if r.code != exitRunFailure || !strings.Contains(string(r.stderr), "exec_user") {
		t.Fatalf("--user on a provider without exec_user: %d %s", r.code, r.stderr)
	}
	ctl(t, state, nil, "rm", id).want(t, 0, id+"\n")
}

func TestVolumeCreateRmAndCatColon(t *testing.T) {
	state := t.TempDir()
	ctl(t, state, nil, "volume", "create", "made").want(t, 0, "made\n")
	r := ctl(t, state, nil, "volume", "create", "made")
	if r.code != exitFailure || !strings.Contains(string(r.stderr), "conflict") {
		t.Fatalf("create twice: %d %s", r.code, r.stderr)
	}
	ctl(t, state, nil, "run", "-v", "made:m", "--", "sh", "-c", "printf hi > m/f").want(t, 0, "")
	ctl(t, state, nil, "cat", "made:f").want(t, 0, "hi")
	if r := ctl(t, state, nil, "volume", "ls"); !strings.Contains(string(r.stdout), "made") {
		t.Fatalf("volume ls: %s", r.stdout)
	}
	ctl(t, state, nil, "volume", "rm", "made").want(t, 0, "made\n")
	if r := ctl(t, state, nil, "volume", "rm", "made"); r.code != exitFailure {
		t.Fatalf("rm twice: %d %s", r.code, r.stderr)
	}
}
