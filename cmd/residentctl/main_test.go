package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
)

// ctlBin is residentctl (built with -race) with the resident beside it, as
// they ship; the tests rely on the "beside its own executable" lookup.
var ctlBin string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "residentctl-test-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	for _, build := range [][]string{
		{"go", "build", "-race", "-o", dir, "."},
		{"go", "build", "-o", dir, "../resident"},
	} {
		cmd := exec.Command(build[0], build[1:]...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building:", strings.Join(build, " "), err)
			return 1
		}
	}
	ctlBin = filepath.Join(dir, "residentctl")
	return m.Run()
}

type result struct {
	stdout, stderr []byte
	code           int
}

// ctl runs residentctl with a private state dir and install id; stdin may
// be nil.
func ctl(t *testing.T, state string, stdin []byte, args ...string) result {
	t.Helper()
	full := append([]string{"--state-dir", state, "--install-id", "ctl-" + strings.ReplaceAll(t.Name(), "/", "-")}, args...)
	cmd := exec.Command(ctlBin, full...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("residentctl %q did not finish; stderr:\n%s", args, stderr.String())
	}
	return result{stdout.Bytes(), stderr.Bytes(), cmd.ProcessState.ExitCode()}
}

func (r result) want(t *testing.T, code int, stdout string) {
	t.Helper()
	if r.code != code || (stdout != "*" && string(r.stdout) != stdout) {
		t.Fatalf("exit %d (want %d), stdout %q (want %q), stderr:\n%s", r.code, code, r.stdout, stdout, r.stderr)
	}
}

func TestRunExitCodeAndUntouchedBytes(t *testing.T) {
	state := t.TempDir()
	r := ctl(t, state, nil, "run", "--", "sh", "-c", `printf 'a\377\000\376\r\nb'; printf 'to stderr' >&2; exit 7`)
	r.want(t, 7, "a\xff\x00\xfe\r\nb")
	if string(r.stderr) != "to stderr" {
		t.Fatalf("stderr %q", r.stderr)
	}
	ctl(t, state, nil, "run", "--env", "GREETING=hello there", "--", "sh", "-c", `echo "$GREETING"`).want(t, 0, "hello there\n")
	// The sandboxes were terminated.
	ctl(t, state, nil, "ls", "--json").want(t, 0, "[]\n")
}

func TestRunStdin(t *testing.T) {
	state := t.TempDir()
	in := make([]byte, 600<<10)
	_, _ = rand.Read(in)
	r := ctl(t, state, in, "run", "-i", "--", "cat")
	if r.code != 0 || !bytes.Equal(r.stdout, in) {
		t.Fatalf("-i cat: exit %d, %d of %d bytes back, stderr:\n%s", r.code, len(r.stdout), len(in), r.stderr)
	}
	// Without -i the command's stdin is closed, never residentctl's.
	ctl(t, state, []byte("not forwarded"), "run", "--", "cat").want(t, 0, "")
}

func TestRunTimeout(t *testing.T) {
	r := ctl(t, t.TempDir(), nil, "run", "--timeout", "300ms", "--", "sh", "-c", "echo started; sleep 30")
	r.want(t, 137, "started\n")
	if !strings.Contains(string(r.stderr), "timed out after 300ms") {
		t.Fatalf("stderr %q", r.stderr)
	}
}

func TestKeepLsExecCpRm(t *testing.T) {
	state := t.TempDir()
	r := ctl(t, state, nil, "run", "--keep", "--image", "alpine:3.20", "--", "true")
	r.want(t, 0, "")
	kept := string(r.stderr)
	var boxes []protocol.Sandbox
	r = ctl(t, state, nil, "ls", "--json")
	if err := json.Unmarshal(r.stdout, &boxes); err != nil || len(boxes) != 1 || boxes[0].Image != "alpine:3.20" {
		t.Fatalf("ls --json: %s %v", r.stdout, err)
	}
	id := boxes[0].SandboxID
	if kept != "residentctl: kept sandbox "+id+"\n" || !strings.Contains(string(ctl(t, state, nil, "ls").stdout), id) {
		t.Fatalf("kept %q, but ls does not show it", kept)
	}

	local := filepath.Join(t.TempDir(), "tool.sh")
	if err := os.WriteFile(local, []byte("#!/bin/sh\nprintf 'tool \\001\\377'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctl(t, state, nil, "cp", local, id+":/scripts/tool").want(t, 0, "")
	ctl(t, state, nil, "exec", id, "--", "./scripts/tool").want(t, 0, "tool \x01\xff")
	ctl(t, state, []byte("piped in"), "cp", "-", id+":/note").want(t, 0, "")
	ctl(t, state, []byte("ignored"), "exec", id, "-i", "--", "sh", "-c", "cat note; cat").want(t, 0, "piped inignored")

	ctl(t, state, nil, "rm", id).want(t, 0, id+"\n")
	ctl(t, state, nil, "ls", "--json").want(t, 0, "[]\n")
}

// TestRmIsIdempotent: terminate is idempotent, and so is rm. A sandbox that
// is already gone (or never was) exits 0 and says that nothing existed,
// on stderr, so stdout lists only what this call removed.
func TestRmIsIdempotent(t *testing.T) {
	state := t.TempDir()
	r := ctl(t, state, nil, "run", "--keep", "--", "true")
	r.want(t, 0, "")
	id := strings.TrimSpace(strings.TrimPrefix(string(r.stderr), "residentctl: kept sandbox "))
	ctl(t, state, nil, "rm", id).want(t, 0, id+"\n")
	for _, gone := range []string{id, "lcl-0000000000000000"} {
		r = ctl(t, state, nil, "rm", gone)
		r.want(t, 0, "")
		if want := "residentctl: rm " + gone + ": nothing existed"; !strings.HasPrefix(string(r.stderr), want) {
			t.Fatalf("rm of a removed sandbox: stderr %q, want it to start %q", r.stderr, want)
		}
	}
}

func TestVolumes(t *testing.T) {
	state := t.TempDir()
	ctl(t, state, nil, "run", "-v", "work:work", "--", "sh", "-c", `mkdir work/sub; printf 'x\000\377y' > work/sub/data.bin`).want(t, 0, "")
	var vols []protocol.Volume
	if r := ctl(t, state, nil, "volumes", "--json"); json.Unmarshal(r.stdout, &vols) != nil || len(vols) != 1 || vols[0].Name != "work" {
		t.Fatalf("volumes --json: %s", r.stdout)
	}
	var dir protocol.ListDirResult
	if r := ctl(t, state, nil, "ls-volume", "work", "sub", "--json"); json.Unmarshal(r.stdout, &dir) != nil || len(dir.Entries) != 1 || dir.Entries[0].Size != 4 {
		t.Fatalf("ls-volume --json: %s", r.stdout)
	}
	if r := ctl(t, state, nil, "ls-volume", "work"); !strings.Contains(string(r.stdout), "sub/") {
		t.Fatalf("ls-volume: %s", r.stdout)
	}
	ctl(t, state, nil, "cat", "work", "sub/data.bin").want(t, 0, "x\x00\xffy")
	r := ctl(t, state, nil, "cat", "work", "missing")
	r.want(t, 1, "")
	if !strings.Contains(string(r.stderr), "not_found; hint:") {
		t.Fatalf("cat missing: %s", r.stderr)
	}
}

func TestErrorsPrintKindAndHint(t *testing.T) {
	state := t.TempDir()
	r := ctl(t, state, nil, "exec", "lcl-0000000000000000", "--", "true")
	r.want(t, 125, "")
	if !strings.Contains(string(r.stderr), "(not_found)") || !strings.Contains(string(r.stderr), "residentctl: not_found; hint: `residentctl ls`") {
		t.Fatalf("stderr: %s", r.stderr)
	}
	r = ctl(t, state, nil, "run", "--", "no-such-command-xyz")
	r.want(t, 127, "") // as a shell: no such program
	if !strings.Contains(string(r.stderr), "not_found; hint:") {
		t.Fatalf("missing command: %s", r.stderr)
	}
	r = ctl(t, state, nil, "--resident", "/nonexistent/resident", "ls")
	r.want(t, 1, "")
	if !strings.Contains(string(r.stderr), "hint:") {
		t.Fatalf("missing resident: %s", r.stderr)
	}
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, nil, 0o644); err != nil || os.Truncate(big, 9<<20) != nil {
		t.Fatal("making a 9 MiB file")
	}
	// Over max_file_bytes is streamed (capabilities.upload): the missing
	// sandbox is what fails.
	r = ctl(t, state, nil, "cp", big, "lcl-0000000000000000:/big")
	r.want(t, 1, "")
	if !strings.Contains(string(r.stderr), "residentctl: not_found; hint:") {
		t.Fatalf("cp to a missing sandbox: %s", r.stderr)
	}
	ctl(t, state, nil, "frobnicate").want(t, 2, "")
	ctl(t, state, nil, "run").want(t, 2, "")
	ctl(t, state, nil, "run", "--env", "NOEQUALS", "--", "true").want(t, 2, "")
}

// A reader that leaves (residentctl run ... | head) ends the command quietly
// with 141, and the sandbox is still removed.
func TestBrokenPipe(t *testing.T) {
	state := t.TempDir()
	cmd := exec.Command(ctlBin, "--state-dir", state, "--install-id", "ctl-pipe", "run", "--", "yes")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(stdout, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	_ = stdout.Close()
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 141 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	if r := ctl(t, state, nil, "--install-id", "ctl-pipe", "ls", "--json"); string(r.stdout) != "[]\n" {
		t.Fatalf("sandbox left behind: %s", r.stdout)
	}
}

// Ctrl-C cancels the command through the resident (which is in its own
// process group, so it is still there to clean up), removes the sandbox,
// and exits 130.
func TestInterrupt(t *testing.T) {
	state := t.TempDir()
	cmd := exec.Command(ctlBin, "--state-dir", state, "--install-id", "ctl-int", "run", "--", "sh", "-c", "echo up; sleep 30")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(stdout, make([]byte, 3)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = cmd.Process.Signal(os.Interrupt)
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 || time.Since(start) > 20*time.Second || !strings.Contains(stderr.String(), "cancelled; hint:") {
		t.Fatalf("exit %d after %s, stderr:\n%s", code, time.Since(start), stderr.String())
	}
	if r := ctl(t, state, nil, "--install-id", "ctl-int", "ls", "--json"); string(r.stdout) != "[]\n" {
		t.Fatalf("sandbox left behind: %s", r.stdout)
	}
}

// The bar is drawn from the structured fields, whatever words the provider
// chose: no provider's status text is parsed here.
func TestPullProgress(t *testing.T) {
	updates := []protocol.PullProgress{
		{Image: "img", Status: "resolving img"},
		{Image: "img", Status: "fetching part one", Layer: "one", Phase: protocol.PullDownloading, Current: 10, Total: 100},
		{Image: "img", Status: "fetching part one", Layer: "one", Phase: protocol.PullDownloading, Current: 50, Total: 100},
		{Image: "img", Status: "part one in place", Layer: "one", Phase: protocol.PullComplete},
	}
	var plain bytes.Buffer
	p := newPullProgress(&plain)
	for _, u := range updates {
		p.update(u)
	}
	p.done()
	want := "pull img: resolving img\npull img: fetching part one\npull img: part one in place\n"
	if plain.String() != want {
		t.Fatalf("plain:\n%s", plain.String())
	}
	var term bytes.Buffer
	p = newPullProgress(&term)
	p.terminal = true
	for _, u := range updates {
		p.update(u)
	}
	p.done()
	if out := term.String(); !strings.HasSuffix(out, "pulling img ["+strings.Repeat("=", 30)+"] 100 B / 100 B, 1/1 layers\n") || !strings.HasPrefix(out, "\r\x1b[K") {
		t.Fatalf("terminal: %q", out)
	}
}

// residentctl knows no provider names of its own: it asks the resident
// binary, the real one beside it or whatever --resident names.
func TestProvidersComeFromTheResident(t *testing.T) {
	state := t.TempDir()
	listed, err := exec.Command(filepath.Join(filepath.Dir(ctlBin), "resident"), "--list-providers").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"docker", "external", "local"} {
		if !slices.Contains(strings.Fields(string(listed)), name) {
			t.Fatalf("resident --list-providers = %q, no %s", listed, name)
		}
	}
	ctl(t, state, nil, "providers").want(t, 0, string(listed))

	fake := filepath.Join(t.TempDir(), "resident")
	script := "#!/bin/sh\n[ \"$1\" = --list-providers ] && printf 'alpha\\nbeta\\n' && exit 0\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctl(t, state, nil, "--resident", fake, "providers").want(t, 0, "alpha\nbeta\n")
	if r := ctl(t, state, nil, "--resident", fake, "help"); r.code != 0 || !bytes.Contains(r.stdout, []byte("providers (--provider): alpha, beta\n")) {
		t.Fatalf("help: exit %d\n%s", r.code, r.stdout)
	}
}

// --pool reaches sandbox/create: local has no pools, and says so by name.
func TestRunPoolNeedsTheCapability(t *testing.T) {
	r := ctl(t, t.TempDir(), nil, "run", "--pool", "2", "--", "true")
	if r.code != exitRunFailure || !strings.Contains(string(r.stderr), "capabilities.pool") {
		t.Fatalf("run --pool on local: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// snapshot and build reach the wire: local has neither, and says so by name.
func TestSnapshotAndBuildNeedTheirCapabilities(t *testing.T) {
	state := t.TempDir()
	r := ctl(t, state, nil, "snapshot", "ls")
	if r.code != exitFailure || !strings.Contains(string(r.stderr), "capabilities.snapshot") {
		t.Fatalf("snapshot ls on local: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = ctl(t, state, nil, "build", "t1", dir)
	if r.code != exitFailure || !strings.Contains(string(r.stderr), "capabilities.image_build") {
		t.Fatalf("build on local: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	ctl(t, state, nil, "snapshot", "only-one-word").want(t, exitUsage, "")
}
