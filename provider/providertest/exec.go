package providertest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

func runExec(t *testing.T, h Harness) {
	e := newEnv(t, h)
	id := e.create(protocol.Spec{Workdir: "/work", Env: map[string]string{"SPEC_ONLY": "from-spec", "BOTH": "from-spec"}}, nil)

	t.Run("argv_is_not_a_shell_string", func(t *testing.T) {
		out, _, st := runIn(t, e.p, id, provider.ExecRequest{Argv: []string{"printf", "%s|", "$HOME", "a b", "*", "`id`", ";", "'"}})
		if want := "$HOME|a b|*|`id`|;|'|"; out != want || st.Code != 0 {
			t.Fatalf("printf printed %q (exit %d), want %q", out, st.Code, want)
		}
	})

	t.Run("exit_codes", func(t *testing.T) {
		for _, code := range []int{0, 1, 7, 255} {
			_, _, st := runIn(t, e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", fmt.Sprintf("exit %d", code)}})
			if st.Code != code || st.Signal != "" {
				t.Errorf("exit %d: got %+v", code, st)
			}
		}
	})

	t.Run("killed_by_a_signal", func(t *testing.T) {
		_, _, st := runIn(t, e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "kill -9 $$"}})
		if st.Code != 128+9 || (st.Signal != "" && st.Signal != "SIGKILL") {
			t.Fatalf("got %+v, want code 137 and signal SIGKILL (or unknown)", st)
		}
	})

	t.Run("stdout_and_stderr_are_separate", func(t *testing.T) {
		out, errOut, _ := runIn(t, e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "echo out1; echo err1 >&2; echo out2; echo err2 >&2"}})
		if out != "out1\nout2\n" || errOut != "err1\nerr2\n" {
			t.Fatalf("stdout %q stderr %q", out, errOut)
		}
	})

	t.Run("binary_output_survives", func(t *testing.T) {
		out, _, _ := runIn(t, e.p, id, provider.ExecRequest{Argv: []string{"printf", `\377\376\000\001abc\n\200\300`}})
		if want := "\xff\xfe\x00\x01abc\n\x80\xc0"; out != want {
			t.Fatalf("got % x, want % x", out, want)
		}
	})

	t.Run("binary_stdin_round_trips", func(t *testing.T) {
		all := make([]byte, 256)
		for i := range all {
			all[i] = byte(i)
		}
		out := e.pipeThrough(id, bytes.Repeat(all, 64))
		if !bytes.Equal(out, bytes.Repeat(all, 64)) {
			t.Fatalf("cat returned %d bytes that differ from the %d sent", len(out), 256*64)
		}
	})

	t.Run("env_is_only_what_was_asked", func(t *testing.T) {
		canary := "RESIDENT_CONFORMANCE_CANARY"
		t.Setenv(canary, "leaked-from-the-resident")
		t.Setenv("RESIDENT_SECRET_CONFORMANCE", "leaked-secret")
		out, _, _ := runIn(t, e.p, id, provider.ExecRequest{Argv: []string{"env"}, Env: map[string]string{"FOO": "bar baz", "BOTH": "from-exec"}})
		vars := lines(out)
		for _, want := range []string{"FOO=bar baz", "SPEC_ONLY=from-spec", "BOTH=from-exec"} {
			if !slices.Contains(vars, want) {
				t.Errorf("env lacks %q:\n%s", want, out)
			}
		}
		if !slices.ContainsFunc(vars, func(v string) bool { return strings.HasPrefix(v, "PATH=") }) {
			t.Errorf("env has no PATH:\n%s", out)
		}
		if strings.Contains(out, "leaked") {
			t.Errorf("the resident's own environment reached the sandbox:\n%s", out)
		}
	})

	t.Run("stdin_is_streamed", func(t *testing.T) {
		r := start(t, ctx(t), e.p, id, provider.ExecRequest{Argv: []string{"cat"}, Stdin: true})
		in := r.proc.Stdin()
		if in == nil {
			t.Fatal("Stdin() is nil although ExecRequest.Stdin was set")
		}
		if _, err := in.Write([]byte("ping\n")); err != nil {
			t.Fatal(err)
		}
		// The echo must come back before stdin is closed: streamed, not
		// gathered until EOF.
		await(t, "cat to echo the first line", func() bool { return r.stdout.String() == "ping\n" })
		if _, err := in.Write([]byte("pong\n")); err != nil {
			t.Fatal(err)
		}
		if err := in.Close(); err != nil {
			t.Fatal(err)
		}
		if st := r.wait(t); st.Code != 0 || r.stdout.String() != "ping\npong\n" {
			t.Fatalf("cat: %+v, stdout %q", st, r.stdout.String())
		}
	})

	t.Run("stdin_is_closed_when_not_requested", func(t *testing.T) {
		r := start(t, ctx(t), e.p, id, provider.ExecRequest{Argv: []string{"cat"}})
		if r.proc.Stdin() != nil {
			t.Error("Stdin() is not nil although ExecRequest.Stdin was false")
		}
		if st := r.wait(t); st.Code != 0 || r.stdout.String() != "" {
			t.Fatalf("cat without stdin: %+v, stdout %q", st, r.stdout.String())
		}
	})

	t.Run("cwd", func(t *testing.T) {
		pwd := func(cwd string) string {
			out, errOut, st := runIn(t, e.p, id, provider.ExecRequest{Argv: []string{"pwd"}, Cwd: cwd})
			if st.Code != 0 {
				t.Fatalf("pwd in %q: exit %d, %s", cwd, st.Code, errOut)
			}
			return strings.TrimSuffix(out, "\n")
		}
		e.sh(id, "/", "mkdir -p a/b")
		root := strings.TrimSuffix(pwd("/"), "/")
		checks := []struct{ cwd, want string }{
			{"", root + "/work"}, // spec.workdir is the default
			{"/a/b", root + "/a/b"},
			{"a/b", root + "/a/b"}, // relative to the sandbox root
			{"/a/b/../../../../..", pwd("/")},
		}
		for _, c := range checks {
			if got := pwd(c.cwd); got != c.want {
				t.Errorf("pwd with cwd %q = %q, want %q", c.cwd, got, c.want)
			}
		}
	})

	t.Run("missing_executable", func(t *testing.T) {
		proc, err := e.p.Exec(ctx(t), id, provider.ExecRequest{Argv: []string{"no-such-command-xyz"}})
		if err == nil { // some backends report it as exit 126/127 instead
			r := &running{proc: proc}
			r.readers.Add(2)
			go func() { defer r.readers.Done(); drain(proc.Stdout()) }()
			go func() { defer r.readers.Done(); drain(proc.Stderr()) }()
			if st := r.wait(t); st.Code != 126 && st.Code != 127 {
				t.Fatalf("missing executable: exit %d, want an error or 126/127", st.Code)
			}
		}
	})

	t.Run("concurrent_execs_keep_their_own_output", func(t *testing.T) {
		const n, linesEach = 20, 200
		script := `i=0; while [ $i -lt ` + fmt.Sprint(linesEach) + ` ]; do echo "$0-$i"; echo "err-$0-$i" >&2; i=$((i+1)); done`
		var wg sync.WaitGroup
		runs := make([]*running, n)
		for i := range runs {
			runs[i] = start(t, ctx(t), e.p, id, provider.ExecRequest{Argv: []string{"sh", "-c", script, fmt.Sprintf("job%d", i)}})
		}
		for i, r := range runs {
			wg.Go(func() {
				var want, wantErr strings.Builder
				for j := range linesEach {
					fmt.Fprintf(&want, "job%d-%d\n", i, j)
					fmt.Fprintf(&wantErr, "err-job%d-%d\n", i, j)
				}
				st, err, ok := r.waitWithin(awaitTimeout)
				switch {
				case !ok || err != nil || st.Code != 0:
					t.Errorf("job%d: Wait = %+v, %v, returned=%v", i, st, err, ok)
				case r.stdout.String() != want.String() || r.stderr.String() != wantErr.String():
					t.Errorf("job%d: output mixed up or lost (%d/%d stdout bytes)", i, len(r.stdout.Bytes()), want.Len())
				}
			})
		}
		wg.Wait()
	})
}

// pipeThrough sends data through cat on stdin and returns what came out.
func (e *env) pipeThrough(id string, data []byte) []byte {
	e.t.Helper()
	r := start(e.t, ctx(e.t), e.p, id, provider.ExecRequest{Argv: []string{"cat"}, Stdin: true})
	go func() {
		in := r.proc.Stdin()
		_, _ = in.Write(data)
		_ = in.Close()
	}()
	r.wait(e.t)
	return r.stdout.Bytes()
}
