package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
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
	tty     bool
	user    string
	cwd     string
}

func (f *execFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.env, "env", "set an environment variable `NAME=VALUE` (repeatable)")
	fs.DurationVar(&f.timeout, "timeout", 0, "kill the command after this long, e.g. 30s (default: the resident's, 1h)")
	fs.BoolVar(&f.stdin, "i", false, "forward residentctl's stdin to the command (otherwise its stdin is closed)")
	fs.BoolVar(&f.tty, "t", false, "run the command on a terminal the size of residentctl's (stdin must be one; capabilities.tty); with -i, a real terminal: raw mode, every key (Ctrl-C too) goes to the command")
	both := bothFlag{&f.stdin, &f.tty}
	fs.Var(both, "it", "-i and -t together, as docker's -it")
	fs.Var(both, "ti", "-i and -t together")
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
	pool := fs.Int("pool", 0, "keep `N` sandboxes of this spec and these tags ready for the next run (capabilities.pool; 0: none)")
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
	if err := ef.checkTerminal(stdio); err != nil {
		return usageError(stdio, "run", err)
	}

	s, err := g.connect(ctx, stdio)
	if err != nil {
		return report(stdio, g, "run", err, exitRunFailure)
	}
	defer s.close()
	create := protocol.CreateParams{Spec: spec, Tags: tags}
	if *pool > 0 {
		create.Pool = &protocol.PoolParams{Size: *pool}
	}
	id, err := s.Create(ctx, create)
	s.progress.done()
	if err != nil {
		return report(stdio, g, "run: creating the sandbox", err, exitRunFailure)
	}
	code := execute(ctx, s, g, stdio, "run", protocol.ExecParams{SandboxID: id, Argv: fs.Args(), TimeoutS: timeout, User: ef.user, Cwd: ef.cwd}, ef)
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
	// Flags go before the id (exec -it ID, as docker's), after it, or both.
	if err := fs.Parse(args); err != nil {
		return usageExit(fs, stdio, err)
	}
	if fs.NArg() == 0 || fs.Arg(0) == "--" {
		fmt.Fprintln(stdio.err, "residentctl exec: usage: residentctl exec [flags] ID [flags] -- CMD ARGS...")
		return exitUsage
	}
	id := fs.Arg(0)
	if err := fs.Parse(fs.Args()[1:]); err != nil {
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
	if err := ef.checkTerminal(stdio); err != nil {
		return usageError(stdio, "exec", err)
	}
	if detach && ef.tty {
		return usageError(stdio, "exec", errors.New("-d and -t do not go together: a detached exec has no terminal to follow"))
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
	return execute(ctx, s, g, stdio, "exec", p, ef)
}

// execute runs the command with its output going straight to stdout and
// stderr (with -t, a terminal's output is all stdout), and returns its exit
// code (or 125 when it could not run).
func execute(ctx context.Context, s *session, g *globals, stdio stdio, what string, p protocol.ExecParams, ef execFlags) int {
	streams := client.Streams{Stdout: stdio.out, Stderr: stdio.err}
	if ef.stdin {
		streams.Stdin = stdio.in
	}
	var res *protocol.ExecResult
	var err error
	if ef.tty {
		var t *localTerminal
		if t, err = terminalOf(stdio.in); err == nil {
			res, err = execOnTerminal(ctx, s, t, p, streams) // the terminal is restored when it returns
		}
	} else {
		res, err = s.Exec(ctx, p, streams)
	}
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

// checkTerminal refuses -t before anything starts when stdin is not a
// terminal, as docker does.
func (f *execFlags) checkTerminal(stdio stdio) error {
	if !f.tty {
		return nil
	}
	_, err := terminalOf(stdio.in)
	return err
}

// bothFlag is a boolean flag that sets two: -it is -i -t, which the flag
// package would otherwise read as one flag named "it".
type bothFlag [2]*bool

func (b bothFlag) String() string {
	if b[0] == nil {
		return "false"
	}
	return fmt.Sprint(*b[0] && *b[1])
}

func (b bothFlag) Set(v string) error {
	on, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	if on {
		*b[0], *b[1] = true, true
	}
	return nil
}

func (bothFlag) IsBoolFlag() bool { return true }

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
