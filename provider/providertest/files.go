package providertest

import (
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

func runWriteFile(t *testing.T, h Harness) {
	e := newEnv(t, h)
	fw, ok := e.p.(provider.FileWriter)
	if !ok {
		t.Skip("provider does not implement provider.FileWriter")
	}
	id := e.create(protocol.Spec{}, nil)
	write := func(t *testing.T, path, data string, mode uint32) {
		t.Helper()
		if err := fw.WriteFile(ctx(t), id, path, []byte(data), mode); err != nil {
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
		write(t, "bin/hello.sh", "#!/bin/sh\necho hello \"$1\"\n", 0o755)
		out, errOut, st := e.run(id, provider.ExecRequest{Argv: []string{"./bin/hello.sh", "there"}, Cwd: "/"})
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
		err := fw.WriteFile(ctx(t), id, "../../../../../../"+name, []byte("inside\n"), 0o644)
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
			err := fw.WriteFile(ctx(t), id, p, []byte("x"), 0o644)
			wantKind(t, "WriteFile("+p+")", err, protocol.KindInvalidRequest)
		}
	})
}
