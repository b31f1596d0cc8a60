package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/resident-dev/resident/client"
	"github.com/resident-dev/resident/protocol"
)

// execFlags are shared by run and exec.
type execFlags struct {
	env     multiFlag
	timeout time.Duration
	stdin   bool
	user    string
	cwd     string
}

func (f *execFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.env, "env", "set an environment variable `NAME=VALUE` (repeatable)")
	fs.DurationVar(&f.timeout, "timeout", 0, "kill the command after this long, e.g. 30s (default: the resident's, 1h)")
	fs.BoolVar(&f.stdin, "i", false, "forward residentctl's stdin to the command (otherwise its stdin is closed)")
	fs.StringVar(&f.cwd, "w", "", "working directory of the command (default: the sandbox's work directory)")
	if fs.Lookup("user") == nil {
		fs.StringVar(&f.user, "user", "", "run the command as NAME, UID or UID:GID (needs capabilities.exec_user)")
	}
}

func cmdRun(ctx context.Context, g *globals, stdio stdio, args []string) int {
	fs := g.flags("run", stdio)
	var sf specFlags
	sf.register(fs) // first: its --user is the sandbox's, which execFlags then leaves alone
	var ef execFlags
	ef.register(fs)
	keep := fs.Bool("keep", false, "keep the sandbox afterwards and print its id on stderr (default: terminate it)")
	if err := fs.Parse(args); err != nil {
		return usageExit(fs, stdio, err)
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stdio.err, "residentctl run: no command given; usage: residentctl run [flags] -- CMD ARGS...")
		return exitUsage
	}
	env, err := envMap(ef.env)
	if err != nil {
		return usageError(stdio, "run", err)
	}
	spec, tags, err := sf.spec(env)
	if err != nil {
		return usageError(stdio, "run", err)
	}
	timeout, err := timeoutSeconds(ef.timeout)
	if err != nil {
		return usageError(stdio, "run", err)
	}

	s, err := g.connect(ctx, stdio)
	if err != nil {
		return report(stdio, g, "run", err, exitRunFailure)
	}
	defer s.close()
	id, err := s.Create(ctx, protocol.CreateParams{Spec: spec, Tags: tags})
	s.progress.done()
	if err != nil {
		return report(stdio, g, "run: creating the sandbox", err, exitRunFailure)
	}
	code := execute(ctx, s, g, stdio, "run", protocol.ExecParams{SandboxID: id, Argv: fs.Args(), TimeoutS: timeout, User: ef.user, Cwd: ef.cwd}, ef.stdin)
	if *keep {
		fmt.Fprintf(stdio.err, "residentctl: kept sandbox %s\n", id)
		return code
	}
	// The command's context may be cancelled (Ctrl-C); cleanup gets its own.
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := s.Terminate(cleanup, id); err != nil {
		report(stdio, g, "run: terminating sandbox "+id+" (remove it with residentctl rm)", err, exitRunFailure)
	}
	return code
}

func cmdExec(ctx context.Context, g *globals, stdio stdio, args []string) int {
	fs := g.flags("exec", stdio)
	var ef execFlags
	ef.register(fs)
	var detach bool
	var detachID string
	registerDetach(fs, &detach, &detachID)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(stdio.err, "residentctl exec: usage: residentctl exec ID [flags] -- CMD ARGS...")
		return exitUsage
	}
	id := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return usageExit(fs, stdio, err)
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stdio.err, "residentctl exec: no command given; usage: residentctl exec ID [flags] -- CMD ARGS...")
		return exitUsage
	}
	env, err := envMap(ef.env)
	if err != nil {
		return usageError(stdio, "exec", err)
	}
	timeout, err := timeoutSeconds(ef.timeout)
	if err != nil {
		return usageError(stdio, "exec", err)
	}
	s, err := g.connect(ctx, stdio)
	if err != nil {
		return report(stdio, g, "exec", err, exitRunFailure)
	}
	defer s.close()
	if id, err = s.resolveID(ctx, id); err != nil {
		return report(stdio, g, "exec", err, exitRunFailure)
	}
	p := protocol.ExecParams{SandboxID: id, Argv: fs.Args(), Env: env, TimeoutS: timeout, User: ef.user, Cwd: ef.cwd}
	if detach {
		p.Stdin = ef.stdin // fed later through residentctl attach -i
		return startDetached(ctx, s, g, stdio, p, detachID)
	}
	return execute(ctx, s, g, stdio, "exec", p, ef.stdin)
}

// execute runs the command with its output going straight to stdout and
// stderr, and returns its exit code (or 125 when it could not run).
func execute(ctx context.Context, s *session, g *globals, stdio stdio, what string, p protocol.ExecParams, stdin bool) int {
	streams := client.Streams{Stdout: stdio.out, Stderr: stdio.err}
	if stdin {
		streams.Stdin = stdio.in
	}
	res, err := s.Exec(ctx, p, streams)
	if err != nil && res != nil && errors.Is(err, syscall.EPIPE) {
		return exitBrokenPipe // the reader of our output left (| head): the command was killed, quietly
	}
	if err != nil {
		return report(stdio, g, what, err, startFailureCode(err))
	}
	if res.TimedOut {
		limit := time.Duration(p.TimeoutS * float64(time.Second))
		if limit == 0 {
			limit = time.Duration(s.Info().Limits.DefaultExecTimeoutS) * time.Second
		}
		fmt.Fprintf(stdio.err, "residentctl: %s: the command timed out after %s and was killed\n", what, limit)
	}
	if dropped := res.StdoutDropped + res.StderrDropped; dropped > 0 {
		fmt.Fprintf(stdio.err, "residentctl: %s: %d output bytes past the resident's per-stream cap were dropped\n", what, dropped)
	}
	return res.ExitCode
}

func usageError(stdio stdio, cmd string, err error) int {
	fmt.Fprintf(stdio.err, "residentctl %s: %v\n", cmd, err)
	return exitUsage
}

// startFailureCode is what a shell would exit with for a command that could
// not start: 127 for a missing program, 126 for one it cannot execute;
// 125 (residentctl's own failure) for anything else.
func startFailureCode(err error) int {
	switch reason, field := client.ReasonOf(err); {
	case field != protocol.FieldArgv:
		return exitRunFailure
	case reason == protocol.ReasonNoSuchFile:
		return exitNotFound
	case reason == protocol.ReasonPermissionDenied:
		return exitNotExecutable
	}
	return exitRunFailure
}
