package providertest

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// perm is a write_file mode the host gave.
func perm(mode uint32) *uint32 { return &mode }

func runWriteFile(t *testing.T, h Harness) {
	e := newEnv(t, h)
	fw, ok := e.p.(provider.FileWriter)
	if !ok || !e.p.Info().Capabilities.WriteFile {
		t.Skip("provider cannot write files")
	}
	id := e.create(protocol.Spec{}, nil)
	write := func(t *testing.T, path, data string, mode uint32) {
		t.Helper()
		if err := fw.WriteFile(ctx(t), id, path, []byte(data), perm(mode)); err != nil {
			t.Fatalf("WriteFile(%q): %v", path, err)
		}
	}
	// Commands run with cwd "/" and relative paths: on a provider without
	// a filesystem of its own, an absolute path in argv is the host's.
	cat := func(path string) string { return e.sh(id, "/", "cat "+path) }
	mode := func(path string) string { return e.sh(id, "/", "stat -c %a "+path) }

	t.Run("creates_parents_and_honours_mode", func(t *testing.T) {
		write(t, "/deep/er/f.bin", "hello\x00\xff\n", 0o640)
		if got := cat("deep/er/f.bin"); got != "hello\x00\xff\n" {
			t.Errorf("content %q", got)
		}
		if got := mode("deep/er/f.bin"); got != "640\n" {
			t.Errorf("mode %q, want 640", got)
		}
	})

	t.Run("executable_mode_runs", func(t *testing.T) {
		// Not in bin/: a provider may show the host's /bin read-only.
		write(t, "scripts/hello.sh", "#!/bin/sh\necho hello \"$1\"\n", 0o755)
		out, errOut, st := e.run(id, provider.ExecRequest{Argv: []string{"./scripts/hello.sh", "there"}, Cwd: "/"})
		if out != "hello there\n" || st.Code != 0 {
			t.Fatalf("script: %q %q %+v", out, errOut, st)
		}
	})

	t.Run("overwrite_truncates_and_sets_mode", func(t *testing.T) {
		write(t, "over.txt", "a much longer first version\n", 0o600)
		write(t, "/over.txt", "short\n", 0o644) // absolute: the same file
		if got := cat("over.txt"); got != "short\n" {
			t.Errorf("content %q", got)
		}
		if got := mode("over.txt"); got != "644\n" {
			t.Errorf("mode %q, want 644", got)
		}
	})

	t.Run("dotdot_stays_inside_the_sandbox", func(t *testing.T) {
		name := uniqueName("climb")
		err := fw.WriteFile(ctx(t), id, "../../../../../../"+name, []byte("inside\n"), nil)
		if err != nil {
			wantKind(t, "WriteFile(../..)", err, protocol.KindInvalidRequest)
			return
		}
		if got := cat(name); got != "inside\n" { // clamped to the root
			t.Fatalf("../ path was written somewhere other than the sandbox root (cat: %q)", got)
		}
	})

	t.Run("directories_are_refused", func(t *testing.T) {
		e.sh(id, "/", "mkdir -p adir")
		for _, p := range []string{"", "/", "adir"} {
			err := fw.WriteFile(ctx(t), id, p, []byte("x"), nil)
			wantKind(t, "WriteFile("+p+")", err, protocol.KindInvalidRequest)
		}
	})

	t.Run("mtime_is_the_time_of_the_write", func(t *testing.T) {
		before := time.Now().Add(-time.Minute).Unix() // the sandbox's clock may differ a little
		write(t, "fresh.txt", "now\n", 0o644)
		secs, err := strconv.ParseInt(strings.TrimSpace(e.sh(id, "/", "stat -c %Y fresh.txt")), 10, 64)
		if err != nil || secs < before {
			t.Fatalf("mtime %d (%v), want the time of the write (after %d)", secs, err, before)
		}
	})

	t.Run("omitted_mode_keeps_an_existing_files_mode", func(t *testing.T) {
		if err := fw.WriteFile(ctx(t), id, "keep.sh", []byte("v1\n"), nil); err != nil {
			t.Fatal(err)
		}
		if got := mode("keep.sh"); got != "644\n" {
			t.Errorf("new file without a mode: %q, want 644", got)
		}
		e.sh(id, "/", "chmod 750 keep.sh")
		if err := fw.WriteFile(ctx(t), id, "keep.sh", []byte("v2\n"), nil); err != nil {
			t.Fatal(err)
		}
		if got, content := mode("keep.sh"), cat("keep.sh"); got != "750\n" || content != "v2\n" {
			t.Errorf("overwrite without a mode: mode %q content %q, want 750 and v2", got, content)
		}
		write(t, "keep.sh", "v3\n", 0o600)
		if got := mode("keep.sh"); got != "600\n" {
			t.Errorf("overwrite with mode 0600: %q", got)
		}
	})

	t.Run("writes_with_the_sandbox_users_permissions", func(t *testing.T) {
		// Whatever the sandbox's user is, write_file may do exactly what a
		// command of that user may do. The probes really open (test -w
		// would not do: busybox answers yes to any root, capabilities or
		// not); an append of nothing changes nothing.
		e.sh(id, "/", "mkdir -p locked && chmod 555 locked && printf old > ro.txt && chmod 444 ro.txt")
		t.Cleanup(func() { e.sh(id, "/", "chmod 755 locked") })
		canWrite := func(script string) bool {
			_, _, st := e.run(id, provider.ExecRequest{Argv: []string{"sh", "-c", script}, Cwd: "/"})
			return st.Code == 0
		}
		fileProbe, dirProbe := ": >> ro.txt", "mkdir locked/.probe && rmdir locked/.probe"
		for _, c := range []struct{ path, probe string }{
			{"ro.txt", fileProbe}, {"locked/new.txt", dirProbe}, {"locked/sub/new.txt", dirProbe},
		} {
			err := fw.WriteFile(ctx(t), id, c.path, []byte("new"), nil)
			if canWrite(c.probe) {
				if err != nil {
					t.Errorf("WriteFile(%s): %v, but the sandbox's user may write %s", c.path, err, c.probe)
				}
				continue
			}
			wantKind(t, "WriteFile("+c.path+") that the sandbox's user may not make", err, protocol.KindInvalidRequest)
		}
		if !canWrite(fileProbe) {
			if got, m := cat("ro.txt"), mode("ro.txt"); got != "old" || m != "444\n" {
				t.Errorf("a refused write changed ro.txt: %q mode %q", got, m)
			}
		}
		uid := e.sh(id, "/", "id -u")
		if got := e.sh(id, "/", "stat -c %u fresh.txt"); got != uid {
			t.Errorf("written file owned by uid %q, the sandbox's user is %q", got, uid)
		}
	})

	t.Run("relative_paths_are_in_the_work_directory", func(t *testing.T) {
		wd := e.create(protocol.Spec{Workdir: "/wd"}, nil)
		if err := fw.WriteFile(ctx(t), wd, "rel.txt", []byte("in wd\n"), nil); err != nil {
			t.Fatal(err)
		}
		if got := e.sh(wd, "/", "cat wd/rel.txt"); got != "in wd\n" {
			t.Fatalf("relative write_file with workdir /wd: wd/rel.txt holds %q", got)
		}
	})

	t.Run("read_only_root_has_a_writable_work_directory", func(t *testing.T) {
		ro := e.create(protocol.Spec{ReadOnlyRoot: true}, nil)
		if err := fw.WriteFile(ctx(t), ro, "a.txt", []byte("written\n"), nil); err != nil {
			t.Fatalf("write_file a.txt on a read-only root: %v", err)
		}
		out, errOut, st := e.run(ro, provider.ExecRequest{Argv: []string{"sh", "-c", "cat a.txt && echo more > b.txt && cat b.txt"}})
		if st.Code != 0 || out != "written\nmore\n" {
			t.Fatalf("in the default work directory: exit %d, %q %q", st.Code, out, errOut)
		}
	})
}
