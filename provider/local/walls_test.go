package local_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Tests that plant canaries and prove each wall of an isolated sandbox.

func needIsolation(t *testing.T) {
	t.Helper()
	if !bwrapInstalled() {
		t.Skip("bwrap is not installed: local runs execs unisolated")
	}
}

// sh runs script in the sandbox and returns its stdout and exit code.
func sh(t *testing.T, p provider.Provider, id, cwd, script string) (string, int) {
	t.Helper()
	r := start(t, p, id, provider.ExecRequest{Argv: []string{"sh", "-c", script}, Cwd: cwd})
	st := r.wait(t)
	return r.out(), st.Code
}

// TestSandboxCannotReadHomeOrStateDir: a file in the resident's home and
// one in its state directory stay out of sight, by their host paths.
func TestSandboxCannotReadHomeOrStateDir(t *testing.T) {
	needIsolation(t)
	state := t.TempDir()
	p := open(t, state)
	id, err := p.Create(context.Background(), protocol.Spec{}, owner, nil)
	must(t, err)
	t.Cleanup(func() { p.Terminate(context.Background(), id) })
	inState := filepath.Join(state, "canary-state")
	must(t, os.WriteFile(inState, []byte("STATE-CANARY"), 0o644))
	home, err := os.UserHomeDir()
	must(t, err)
	inHome := filepath.Join(home, ".resident-canary-"+filepath.Base(state))
	must(t, os.WriteFile(inHome, []byte("HOME-CANARY"), 0o644))
	t.Cleanup(func() { os.Remove(inHome) })
	for _, path := range []string{inState, inHome, filepath.Join(state, "local", "sandboxes", id, "meta.json")} {
		if out, code := sh(t, p, id, "", "cat "+path); code == 0 || strings.Contains(out, "CANARY") || strings.Contains(out, id) {
			t.Errorf("the sandbox read %s: exit %d, %q", path, code, out)
		}
	}
	if out, _ := sh(t, p, id, "", "for d in /home /root /run /tmp; do ls -A $d 2>/dev/null; done"); strings.TrimSpace(out) != "" {
		t.Errorf("the sandbox sees host files in /home, /root, /run or /tmp: %q", out)
	}
}

// TestOnlyLoopbackWithoutNetwork: without spec.network the sandbox has a
// network namespace of its own, holding only lo; "host" shares the host's.
func TestOnlyLoopbackWithoutNetwork(t *testing.T) {
	needIsolation(t)
	interfaces := func(network string) []string {
		p, id, _ := sandbox(t, protocol.Spec{Network: network})
		out, code := sh(t, p, id, "", "tail -n +3 /proc/net/dev | cut -d: -f1")
		if code != 0 {
			t.Fatalf("reading /proc/net/dev: exit %d", code)
		}
		return strings.Fields(out)
	}
	if got := interfaces(""); len(got) != 1 || got[0] != "lo" {
		t.Errorf("interfaces without spec.network: %q, want only lo", got)
	}
	// Other engines on the machine add and remove interfaces: compare with
	// a host count that held still across the sandbox's read.
	hostCount := func() int {
		host, err := os.ReadFile("/proc/net/dev")
		must(t, err)
		return strings.Count(string(host), "\n") - 2
	}
	p, id, _ := sandbox(t, protocol.Spec{Network: "host"})
	for attempt := 0; ; attempt++ {
		before := hostCount()
		out, _ := sh(t, p, id, "", "tail -n +3 /proc/net/dev | cut -d: -f1")
		got := len(strings.Fields(out))
		if after := hostCount(); before == after {
			if got != before {
				t.Errorf("spec.network host shows %d interfaces, the host %d", got, before)
			}
			break
		}
		if attempt == 20 {
			t.Skip("the host's interfaces never held still")
		}
	}
}

// TestSystemDirectoriesAreReadOnly: the host's toolchains run, and nothing
// in them can be changed.
func TestSystemDirectoriesAreReadOnly(t *testing.T) {
	needIsolation(t)
	p, id, _ := sandbox(t, protocol.Spec{})
	for _, path := range []string{"/usr/resident-x", "/etc/resident-x", "/bin/resident-x"} {
		if out, code := sh(t, p, id, "", "touch "+path+" 2>&1"); code == 0 || !strings.Contains(out, "Read-only") {
			t.Errorf("touch %s: exit %d, %q; want a read-only file system", path, code, out)
		}
		if _, err := os.Lstat(path); err == nil {
			os.Remove(path)
			t.Errorf("%s appeared on the host", path)
		}
	}
	err := p.(provider.FileWriter).WriteFile(context.Background(), id, "/usr/resident-x", []byte("x"), nil)
	if protocol.KindOf(err) != protocol.KindInvalidRequest {
		t.Errorf("write_file into /usr = %v; want invalid_request", err)
	}
}

// TestAbsoluteWorkdirAndVolumeMeanTheSameEverywhere: an eval harness's
// WORK_DIR and a volume at /data are the same paths for cwd, write_file,
// the store and the command itself.
func TestAbsoluteWorkdirAndVolumeMeanTheSameEverywhere(t *testing.T) {
	needIsolation(t)
	const workdir = "/home/evaluser/project"
	p, id, _ := sandbox(t, protocol.Spec{Workdir: workdir, Volumes: []protocol.VolumeMount{{Name: "data", Path: "/data"}, {Name: "rel", Path: "out"}}})
	c := context.Background()
	if out, _ := sh(t, p, id, "", "pwd"); out != workdir+"\n" {
		t.Errorf("default cwd %q, want %s", out, workdir)
	}
	fw := p.(provider.FileWriter)
	must(t, fw.WriteFile(c, id, "rel.txt", []byte("relative"), nil))
	must(t, fw.WriteFile(c, id, workdir+"/abs.txt", []byte("absolute"), nil))
	must(t, fw.WriteFile(c, id, "/data/w.txt", []byte("volume"), nil))
	out, code := sh(t, p, id, "/data", "cat "+workdir+"/rel.txt "+workdir+"/abs.txt w.txt; echo made > /data/m.txt; echo rel > "+workdir+"/out/r.txt")
	if code != 0 || out != "relativeabsolutevolume" {
		t.Errorf("cat in the sandbox: exit %d, %q", code, out)
	}
	if got := readVolume(t, p, "data", "m.txt"); got != "made\n" {
		t.Errorf("the store sees %q in data/m.txt", got)
	}
	if got := readVolume(t, p, "rel", "r.txt"); got != "rel\n" {
		t.Errorf("the store sees %q in rel/r.txt", got)
	}
}

func readVolume(t *testing.T, p provider.Provider, vol, path string) string {
	t.Helper()
	rc, err := p.(provider.Store).ReadFile(context.Background(), owner, vol, path)
	must(t, err)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	must(t, err)
	return string(data)
}

// TestSandboxesCannotSeeEachOther: neither files nor processes of one
// sandbox are visible from another.
func TestSandboxesCannotSeeEachOther(t *testing.T) {
	needIsolation(t)
	state := t.TempDir()
	p := open(t, state)
	c := context.Background()
	a, err := p.Create(c, protocol.Spec{}, owner, nil)
	must(t, err)
	b, err := p.Create(c, protocol.Spec{}, owner, nil)
	must(t, err)
	t.Cleanup(func() { p.Terminate(c, a); p.Terminate(c, b) })
	must(t, p.WriteFile(c, a, "/secret.txt", []byte("A-ONLY"), nil))
	sh(t, p, a, "", "(exec sleep 2000.5151) >/dev/null 2>&1 &")
	aRoot := filepath.Join(state, "local", "sandboxes", a, "root")
	out, _ := sh(t, p, b, "", "cat /secret.txt "+aRoot+"/secret.txt 2>/dev/null; cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '")
	if strings.Contains(out, "A-ONLY") || strings.Contains(out, "2000.5151") {
		t.Errorf("sandbox b sees a's files or processes: %q", out)
	}
}

// TestIsolationAnnounced: under bwrap local says it isolates, and a create
// that requires it succeeds.
func TestIsolationAnnounced(t *testing.T) {
	needIsolation(t)
	p := open(t, t.TempDir())
	if !p.Info().Capabilities.Isolation {
		t.Fatal("capabilities.isolation is false under bwrap")
	}
	id, err := p.Create(context.Background(), protocol.Spec{RequireIsolation: true}, owner, nil)
	must(t, err)
	p.Terminate(context.Background(), id)
}

// TestVolumeParentsCannotBeSwapped: the directories above a volume's
// mount point cannot be renamed away and replaced by a link out of the
// sandbox, which the next exec's bwrap would follow to make the mount
// point on the host.
func TestVolumeParentsCannotBeSwapped(t *testing.T) {
	needIsolation(t)
	target := t.TempDir() // where a link would lead
	p, id, _ := sandbox(t, protocol.Spec{Volumes: []protocol.VolumeMount{{Name: "deep", Path: "/a/b/vol"}}})
	out, code := sh(t, p, id, "", "mv /a /a.moved 2>&1 || mv /a/b /a/b.moved 2>&1 || exit 0; ln -s "+target+" /a; echo swapped")
	if strings.Contains(out, "swapped") || code != 0 {
		t.Fatalf("a parent of the mount point was swapped: exit %d, %q", code, out)
	}
	sh(t, p, id, "", "true") // the next exec's bwrap
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Fatalf("bwrap made %v on the host", entries)
	}
}
