package docker

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// The first line reaches the reader while the process is still running: it
// waits for a file that the test makes only after reading that line, so a
// provider that held output until exit would never deliver it.
func TestExecStreamsOutputAsItComes(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	proc, err := p.Exec(testCtx(t), id, provider.ExecRequest{Argv: []string{"sh", "-c", "echo first; echo err-first >&2; while [ ! -e /tmp/go ]; do sleep 0.05; done; echo second"}})
	if err != nil {
		t.Fatal(err)
	}
	errLine := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(proc.Stderr()).ReadString('\n')
		errLine <- line
		_, _ = io.Copy(io.Discard, proc.Stderr())
	}()
	out := bufio.NewReader(proc.Stdout())
	if line, err := out.ReadString('\n'); err != nil || line != "first\n" {
		t.Fatalf("first line %q (%v)", line, err)
	}
	if line := <-errLine; line != "err-first\n" {
		t.Fatalf("first stderr line %q", line)
	}
	sh(t, p, id, "touch /tmp/go")
	rest, _ := io.ReadAll(out) // to EOF, as the resident does
	if st, err := proc.Wait(); err != nil || st.Code != 0 || string(rest) != "second\n" {
		t.Fatalf("Wait = %+v, %v; rest of stdout %q", st, err, rest)
	}
}

// The environment goes through the API: the process sees it, no command
// line in the sandbox carries it.
func TestExecEnvIsNeverOnACommandLine(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{Env: map[string]string{"FROM_SPEC": "spec-canary-41"}}, nil)
	script := `echo "$EXEC_SECRET $FROM_SPEC"; for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < $f; echo; done`
	r := run(t, testCtx(t), p, id, provider.ExecRequest{Argv: []string{"sh", "-c", script}, Env: map[string]string{"EXEC_SECRET": "exec-canary-42"}})
	first, rest, _ := strings.Cut(r.stdout, "\n")
	if first != "exec-canary-42 spec-canary-41" {
		t.Fatalf("the process saw %q", first)
	}
	if strings.Contains(rest, "canary") || !strings.Contains(rest, "/.resident/keeper") {
		t.Fatalf("command lines in the sandbox:\n%s", rest)
	}
}

func TestBackgroundChildDoesNotHoldTheExec(t *testing.T) {
	p, _ := newTestProvider(t)
	// With no overall drain bound left, only the stream going quiet can
	// end this exec while its child lives.
	p.timing.drainMax = time.Hour
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	start := time.Now()
	r := run(t, testCtx(t), p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "sleep 305 & echo done"}})
	took := time.Since(start)
	if r.err != nil || r.status.Code != 0 || r.stdout != "done\n" {
		t.Fatalf("exec with a background child: %+v %v %q after %s", r.status, r.err, r.stdout, took)
	}
	t.Logf("completed %s after start while its child holds stdout", took.Round(time.Millisecond))
	// Not a kill: a background child of a finished exec keeps running.
	if ps := processes(t, p, id); !strings.Contains(ps, "sleep 305") {
		t.Fatalf("the background child was killed:\n%s", ps)
	}
}

func TestExecErrors(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	_, err := p.Exec(testCtx(t), id, provider.ExecRequest{Argv: []string{"true"}, Cwd: "/no/such/dir"})
	if protocol.KindOf(err) != protocol.KindNotFound {
		t.Errorf("missing cwd: %v", err)
	}
	_, err = p.Exec(testCtx(t), id, provider.ExecRequest{Argv: []string{"no-such-binary"}})
	if reason, field := protocol.ReasonOf(err); reason != protocol.ReasonNoSuchFile || field != protocol.FieldArgv || !strings.Contains(err.Error(), "not found") {
		t.Errorf("missing binary: %v (reason %q, field %q); want no_such_file about argv", err, reason, field)
	}
	_, err = p.Exec(testCtx(t), id, provider.ExecRequest{Argv: []string{"true"}, Env: map[string]string{"A=B": "x"}})
	if protocol.KindOf(err) != protocol.KindInvalidRequest {
		t.Errorf("bad env name: %v", err)
	}
	stopped := create(t, p, testOwner(t), protocol.Spec{LifetimeS: 1}, nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err = p.Exec(testCtx(t), stopped, provider.ExecRequest{Argv: []string{"true"}})
		if protocol.KindOf(err) == protocol.KindConflict || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if protocol.KindOf(err) != protocol.KindConflict {
		t.Errorf("exec in an expired sandbox: %v; want conflict", err)
	}
}

// A deadline that passed while the exec was starting (a busy engine) does
// not fail the start: the keeper runs the command and kills it at once,
// on the channel and on the exec path alike, with no resident timer.
func TestExecDeadlinePassedBeforeTheStartKills(t *testing.T) {
	channelMode, _ := newTestProvider(t)
	execMode, _ := newTestProviderWith(t, func(cfg *provider.Config) {
		cfg.Options = provider.NewOptions(map[string]string{OptExec.Name: ExecModeExec})
	})
	for name, p := range map[string]*Provider{"channel": channelMode, "exec": execMode} {
		t.Run(name, func(t *testing.T) {
			id := create(t, p, testOwner(t), protocol.Spec{}, nil)
			ctx := testCtx(t) // its own deadline is 90 s away
			r := run(t, ctx, p, id, provider.ExecRequest{Argv: []string{"sleep", "300"}, Deadline: time.Now().Add(-time.Second)})
			if r.err != nil || r.status.Code != 137 || r.status.Signal != "SIGKILL" || ctx.Err() != nil {
				t.Fatalf("exec past its deadline: %+v %v (ctx %v)", r.status, r.err, ctx.Err())
			}
		})
	}
}
