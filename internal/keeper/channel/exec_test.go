package channel

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

var testEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}

type result struct {
	stdout, stderr string
	status         ExitStatus
}

func run(t *testing.T, c *Conn, s ExecSpec) result {
	t.Helper()
	if s.Env == nil {
		s.Env = testEnv
	}
	e, err := c.Exec(ctx(t), s)
	if err != nil {
		t.Fatalf("exec %q: %v", s.Argv, err)
	}
	return collect(t, e)
}

func collect(t *testing.T, e *Exec) result {
	t.Helper()
	var r result
	var wg sync.WaitGroup
	var outErr, errErr error
	wg.Go(func() { b, err := io.ReadAll(e.Stdout()); r.stdout, outErr = string(b), err })
	wg.Go(func() { b, err := io.ReadAll(e.Stderr()); r.stderr, errErr = string(b), err })
	wg.Wait()
	if outErr != nil || errErr != nil {
		t.Fatalf("output: %v, %v", outErr, errErr)
	}
	st, err := e.Wait()
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	r.status = st
	return r
}

// An exec's argv, env, cwd, stdout, stderr and exit code go over the
// channel as given: the keeper adds nothing to the environment.
func TestExecOutputEnvCwdAndExit(t *testing.T) {
	c, _ := openStdio(t)
	dir := t.TempDir()
	r := run(t, c, ExecSpec{
		Argv: []string{"sh", "-c", `pwd; env | sort; echo oops >&2; exit 3`},
		Env:  []string{"PATH=/usr/bin:/bin", "FOO=bar baz"},
		Cwd:  dir,
	})
	want := dir + "\nFOO=bar baz\nPATH=/usr/bin:/bin\nPWD=" + dir + "\n"
	if r.stdout != want || r.stderr != "oops\n" || r.status.Code != 3 || r.status.Killed {
		t.Fatalf("got %q %q %+v\nwant stdout %q", r.stdout, r.stderr, r.status, want)
	}
}

func TestExecStdin(t *testing.T) {
	c, _ := openStdio(t)
	e, err := c.Exec(ctx(t), ExecSpec{Argv: []string{"sh", "-c", "wc -c; echo done >&2"}, Env: testEnv, Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 3<<20) // far past every window
	go func() {
		_, _ = io.WriteString(e.Stdin(), big)
		_ = e.Stdin().Close()
	}()
	r := collect(t, e)
	if strings.TrimSpace(r.stdout) != "3145728" || r.stderr != "done\n" || r.status.Code != 0 {
		t.Fatalf("got %q %q %+v", r.stdout, r.stderr, r.status)
	}
}

// Each start failure has its reason: a missing program or cwd, a cwd that
// is a file, a file that is not executable, a directory.
func TestStartErrorReasons(t *testing.T) {
	c, _ := openStdio(t)
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		spec          ExecSpec
		reason, field string
	}{
		{"missing program", ExecSpec{Argv: []string{"no-such-program-here"}}, ReasonNoSuchFile, "argv"},
		{"missing path", ExecSpec{Argv: []string{dir + "/nothing"}}, ReasonNoSuchFile, "argv"},
		{"missing cwd", ExecSpec{Argv: []string{"true"}, Cwd: dir + "/gone"}, ReasonNoSuchFile, "cwd"},
		{"cwd is a file", ExecSpec{Argv: []string{"true"}, Cwd: plain}, ReasonNotDirectory, "cwd"},
		{"not executable", ExecSpec{Argv: []string{plain}}, ReasonPermissionDenied, "argv"},
		{"a directory", ExecSpec{Argv: []string{dir}}, ReasonIsDirectory, "argv"},
		{"unknown user", ExecSpec{Argv: []string{"true"}, User: "no-such-user-here"}, "", "user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Env = testEnv
			_, err := c.Exec(ctx(t), tc.spec)
			var se *StartError
			if !errors.As(err, &se) || se.Reason != tc.reason || se.Field != tc.field {
				t.Fatalf("got %v (%#v), want reason %q field %q", err, se, tc.reason, tc.field)
			}
		})
	}
	// The channel still works after them.
	if r := run(t, c, ExecSpec{Argv: []string{"echo", "ok"}}); r.stdout != "ok\n" {
		t.Fatalf("after the failures: %+v", r)
	}
}

// The keeper tells its holder the environment and working directory it
// started with (what an
// engine exec would inherit), so a provider that cannot read the image
// can lay an exec's variables over it; too large an environment is not
// told rather than breaking the Welcome.
func TestWelcomeTellsTheKeepersEnv(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra string
		told  bool
	}{{"small", "RESIDENT_WELCOME_ENV=from the container", true}, {"too large", "RESIDENT_WELCOME_ENV=" + strings.Repeat("x", 30<<10), false}} {
		t.Run(tc.name, func(t *testing.T) {
			k := startStdioEnv(t, []string{"PATH=/usr/bin:/bin", tc.extra})
			c, err := Open(ctx(t), pipeRW{Reader: k.out, WriteCloser: k.stdin, rc: k.out}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if wd, _ := os.Getwd(); c.Cwd() != wd {
				t.Fatalf("Cwd %q, want the keeper's %q", c.Cwd(), wd)
			}
			env := c.Env()
			if got := slices.Contains(env, tc.extra); got != tc.told || (tc.told && !slices.Contains(env, "PATH=/usr/bin:/bin")) {
				t.Fatalf("told %v (%d entries), want %v", got, len(env), tc.told)
			}
			// Nothing of it reaches an exec that did not ask for it.
			r := run(t, c, ExecSpec{Argv: []string{"sh", "-c", "echo ${RESIDENT_WELCOME_ENV:-unset}"}})
			if r.stdout != "unset\n" {
				t.Fatalf("exec saw %q", r.stdout)
			}
		})
	}
}
