package providertest

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// runSelfCheckExec ports the exec cases of inspect_ai's sandbox
// self-check (output, stderr, return code, timeout, permission, env,
// input, working directory, users) to the provider contract, so a harness
// built on inspect_ai sees the same behaviour on every provider. The user
// cases run where exec_user is announced (unannounced.go checks the
// refusal elsewhere); the file cases are selfcheck_files.go's.
func runSelfCheckExec(t *testing.T, h Harness) {
	e := newEnv(t, h)
	id := e.create(protocol.Spec{Workdir: "/home/evaluser/project"}, nil)

	t.Run("exec_output", func(t *testing.T) {
		out, _, st := runIn(t, e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "echo foo; echo bar"}})
		if out != "foo\nbar\n" || st.Code != 0 {
			t.Fatalf("stdout %q exit %d", out, st.Code)
		}
	})
	t.Run("exec_stderr", func(t *testing.T) {
		out, errOut, st := runIn(t, e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "echo boof 1>&2"}})
		if errOut != "boof\n" || out != "" || st.Code != 0 {
			t.Fatalf("stdout %q stderr %q exit %d", out, errOut, st.Code)
		}
	})
	t.Run("exec_returncode", func(t *testing.T) {
		if _, _, st := runIn(t, e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "exit 70"}}); st.Code != 70 {
			t.Fatalf("exit %d, want 70", st.Code)
		}
	})
	t.Run("exec_timeout", func(t *testing.T) {
		c, cancel := context.WithTimeout(ctx(t), time.Second)
		defer cancel()
		r := start(t, c, e.p, id, provider.ExecRequest{Argv: []string{"sleep", "300"}})
		// A backend that reports only the code says 137 (128+SIGKILL).
		if st := r.wait(t); st.Code == 0 || (st.Signal != "SIGKILL" && st.Code != 137) {
			t.Fatalf("a command past its deadline ended %+v, want killed by SIGKILL", st)
		}
	})
	t.Run("exec_permission_error", func(t *testing.T) {
		fw, ok := e.p.(provider.FileWriter)
		if !ok || !e.p.Info().Capabilities.WriteFile {
			t.Skip("the provider has no write_file")
		}
		if err := fw.WriteFile(ctx(t), id, "not_executable.sh", []byte("#!/bin/sh\necho ran\n"), perm(0o644)); err != nil {
			t.Fatal(err)
		}
		_, err := e.p.Exec(ctx(t), id, provider.ExecRequest{Argv: []string{"./not_executable.sh"}})
		wantKind(t, "exec of a file that is not executable", err, protocol.KindInvalidRequest)
	})
	t.Run("exec_env", func(t *testing.T) {
		out, _, _ := runIn(t, e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "echo $A"}, Env: map[string]string{"A": "B"}})
		if out != "B\n" {
			t.Fatalf("stdout %q, want B", out)
		}
	})
	// inspect_ai adds its user first; every test image here has nobody,
	// so the case asks for it by name.
	t.Run("exec_as_user", func(t *testing.T) {
		if !e.p.Info().Capabilities.ExecUser {
			t.Skip("the provider does not announce exec_user")
		}
		out, _, st := runIn(t, e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "id -u; id -un"}, User: "nobody"})
		if out != "65534\nnobody\n" || st.Code != 0 {
			t.Fatalf("as nobody: stdout %q exit %d", out, st.Code)
		}
		out, _, _ = runIn(t, e.p, id, provider.ExecRequest{Argv: []string{"id", "-u"}})
		if out == "65534\n" {
			t.Fatalf("an exec after one as nobody runs as nobody too")
		}
	})
	t.Run("exec_as_nonexistent_user", func(t *testing.T) {
		if !e.p.Info().Capabilities.ExecUser {
			t.Skip("the provider does not announce exec_user")
		}
		_, err := e.p.Exec(ctx(t), id, provider.ExecRequest{Argv: []string{"whoami"}, User: "nonexistent"})
		wantKind(t, "exec as a user the sandbox does not know", err, protocol.KindInvalidRequest)
		if !strings.Contains(err.Error(), `"nonexistent"`) {
			t.Fatalf("error %q: want the user it could not find named", err)
		}
	})
	inputs := map[string][]byte{
		"exec_input":         []byte("text input"),
		"exec_input_special": []byte("hé ℓlo 'quoted' \"double\" $HOME `x` \\ \n\ttabs\nnewline\x00nul"),
		"exec_input_large":   bytes.Repeat([]byte("0123456789abcdef"), 1<<16), // 1 MiB
	}
	for name, data := range inputs {
		t.Run(name, func(t *testing.T) {
			if got := (&env{t: t, h: h, p: e.p, owner: e.owner}).pipeThrough(id, data); !bytes.Equal(got, data) {
				t.Fatalf("cat gave back %d bytes, want the %d sent", len(got), len(data))
			}
		})
	}
	// inspect_ai takes a relative cwd in the work directory; the protocol
	// takes it from the root (a harness joins it first), so these name
	// the work directory absolutely.
	sh := func(t *testing.T, cwd, script string) string {
		t.Helper()
		out, errOut, st := runIn(t, e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", script}, Cwd: cwd})
		if st.Code != 0 {
			t.Fatalf("sh -c %q in %q: exit %d, stderr %q", script, cwd, st.Code, errOut)
		}
		return out
	}
	const work = "/home/evaluser/project"
	t.Run("cwd_unspecified", func(t *testing.T) {
		if out := sh(t, "", "pwd"); out != work+"\n" {
			t.Fatalf("pwd = %q, want the work directory", out)
		}
	})
	t.Run("cwd_custom", func(t *testing.T) {
		sh(t, "", "mkdir -p subdir && echo in-subdir > subdir/marker")
		if out := sh(t, work+"/subdir", "pwd; cat marker"); out != work+"/subdir\nin-subdir\n" {
			t.Fatalf("cwd subdir: %q", out)
		}
	})
	t.Run("cwd_absolute", func(t *testing.T) {
		sh(t, "", "mkdir -p /tmp/selfcheck-abs")
		if out := sh(t, "/tmp/selfcheck-abs", "pwd"); out != "/tmp/selfcheck-abs\n" {
			t.Fatalf("cwd /tmp/selfcheck-abs: %q", out)
		}
	})
	t.Run("cwd_dotdot", func(t *testing.T) {
		sh(t, "", "mkdir -p subdir")
		if out := sh(t, work+"/subdir/..", "pwd"); strings.TrimSpace(out) != work {
			t.Fatalf("cwd subdir/..: %q", out)
		}
	})
	t.Run("cwd_missing", func(t *testing.T) {
		proc, err := e.p.Exec(ctx(t), id, provider.ExecRequest{Argv: []string{"true"}, Cwd: "no/such/dir"})
		if err == nil && h.StartFailuresExit {
			e.wantShellCode(t, proc, protocol.ReasonNoSuchFile, protocol.FieldCwd)
			return
		}
		wantKind(t, "exec in a missing cwd", err, protocol.KindNotFound, protocol.KindInvalidRequest)
	})
}
