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

const secret = "HOST-SECRET-DO-NOT-LEAK"

var owner = provider.Owner{Key: "resident-install-id", InstallID: "local-test"}

// TestStoreNeverLeavesTheVolume plants a secret next to the volume and in a
// sibling volume, then tries every way out with links made on the host.
func TestStoreNeverLeavesTheVolume(t *testing.T) {
	state := t.TempDir()
	// Both volumes are made by hand below: the operator allows them.
	p := openWith(t, state, func(c *provider.Config) {
		c.AllowVolumes = []provider.VolumeGrant{{Name: "box"}, {Name: "sibling"}}
	})
	volumes := filepath.Join(state, "local", "volumes")
	vol := filepath.Join(volumes, "box")
	must(t, os.MkdirAll(filepath.Join(vol, "sub"), 0o755))
	must(t, os.MkdirAll(filepath.Join(volumes, "sibling"), 0o755))
	must(t, os.WriteFile(filepath.Join(state, "secret.txt"), []byte(secret), 0o644))
	must(t, os.WriteFile(filepath.Join(volumes, "sibling", "secret.txt"), []byte(secret), 0o644))
	must(t, os.WriteFile(filepath.Join(vol, "ok.txt"), []byte("fine"), 0o644))
	links := map[string]string{
		"abs":         filepath.Join(state, "secret.txt"),
		"rel":         "../../../secret.txt",
		"sibling":     "../sibling",
		"sub/up":      "../..",
		"hostroot":    "/",
		"sub/chained": "../rel",
		"inside":      "ok.txt", // stays inside: refused too, no symlink is followed
	}
	for name, target := range links {
		must(t, os.Symlink(target, filepath.Join(vol, name)))
	}
	c := context.Background()

	for _, path := range []string{"abs", "rel", "sibling/secret.txt", "sub/up/secret.txt", "sub/up/../secret.txt",
		"hostroot/etc/passwd", "sub/chained", "../secret.txt", "../sibling/secret.txt", "sub/../../secret.txt",
		filepath.Join(state, "secret.txt"), "/../../secret.txt"} {
		rc, err := p.ReadFile(c, owner, "box", path)
		if err == nil {
			data, _ := io.ReadAll(rc)
			rc.Close()
			t.Errorf("ReadFile(%q) = %q; want an error", path, data)
			continue
		}
		if k := protocol.KindOf(err); k != protocol.KindInvalidRequest && k != protocol.KindNotFound {
			t.Errorf("ReadFile(%q): kind %s (%v)", path, k, err)
		}
		if !strings.Contains(path, state) && strings.Contains(err.Error(), state) {
			t.Errorf("ReadFile(%q): error reveals the host path: %v", path, err)
		}
	}
	for _, path := range []string{"sibling", "sub/up", "hostroot", ".."} {
		if _, _, err := p.ListDir(c, owner, "box", path, 10); err == nil {
			t.Errorf("ListDir(%q) succeeded; want an error", path)
		}
	}
	if _, err := p.ReadFile(c, owner, "box", "inside"); protocol.KindOf(err) != protocol.KindInvalidRequest {
		t.Errorf("a link inside the volume: %v, want invalid_request (symlinks are never followed)", err)
	}
	entries, _, err := p.ListDir(c, owner, "box", "/", 100)
	must(t, err)
	for _, e := range entries {
		if _, isLink := links[e.Name]; isLink && e.Type != protocol.EntrySymlink {
			t.Errorf("%s listed as %s", e.Name, e.Type)
		}
	}
}

// TestSandboxPathsStayInside: cwd and write_file never reach the host,
// even through a symlink a sandbox process planted.
func TestSandboxPathsStayInside(t *testing.T) {
	state := t.TempDir()
	outside := t.TempDir()
	p := open(t, state)
	c := context.Background()
	id, err := p.Create(c, protocol.Spec{}, owner, nil)
	must(t, err)
	t.Cleanup(func() { p.Terminate(context.Background(), id) })
	root := filepath.Join(state, "local", "sandboxes", id, "root")
	must(t, os.Symlink(outside, filepath.Join(root, "escape")))
	must(t, os.Symlink("../../../..", filepath.Join(root, "climb")))

	for _, path := range []string{"escape/x", "climb/x", "escape/deeper/x"} {
		err := p.WriteFile(c, id, path, []byte("x"), nil)
		if bwrapInstalled() {
			// Written by the keeper inside the sandbox, where a link
			// resolves in the sandbox's own terms: nothing can land
			// outside (checked below), whatever the link says.
			continue
		}
		if protocol.KindOf(err) != protocol.KindInvalidRequest {
			t.Errorf("WriteFile(%q) = %v; want invalid_request", path, err)
		}
	}
	for _, cwd := range []string{"escape", "climb", "/escape"} {
		if bwrapInstalled() {
			// The keeper resolves cwd inside the sandbox's own mount
			// namespace, where the host's paths do not exist: the link
			// to outside leads nowhere, the climb stops at "/".
			if cwd != "climb" {
				if _, err := p.Exec(c, id, provider.ExecRequest{Argv: []string{"true"}, Cwd: cwd}); err == nil {
					t.Errorf("Exec with cwd %q through a link out of the sandbox started", cwd)
				}
				continue
			}
			r := start(t, p, id, provider.ExecRequest{Argv: []string{"pwd", "-P"}, Cwd: cwd})
			if st := r.wait(t); st.Code != 0 || r.out() != "/\n" {
				t.Errorf("Exec with cwd %q: %+v %q; want it at the sandbox's root", cwd, st, r.out())
			}
			continue
		}
		if _, err := p.Exec(c, id, provider.ExecRequest{Argv: []string{"true"}, Cwd: cwd}); protocol.KindOf(err) != protocol.KindInvalidRequest {
			t.Errorf("Exec with cwd %q = %v; want invalid_request", cwd, err)
		}
	}
	must(t, p.WriteFile(c, id, "../../../../../../clamped.txt", []byte("in"), nil))
	if _, err := os.Stat(filepath.Join(root, "clamped.txt")); err != nil {
		t.Errorf("../ path not clamped to the root: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("something was written outside the sandbox: %v", entries)
	}
}

func readString(t *testing.T, p provider.Store, vol, path string) string {
	t.Helper()
	rc, err := p.ReadFile(context.Background(), owner, vol, path)
	must(t, err)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	must(t, err)
	return string(data)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
