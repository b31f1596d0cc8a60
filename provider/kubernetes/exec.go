package kubernetes

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/resident-dev/resident/internal/keeper"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Exec runs argv in a sandbox under the keeper ("keeper run -relay
// -env-stdin"), over one exec stream of the API server: stdout and stderr
// apart and streamed as they come; the stream's stdin carries the
// environment, then the keeper's control frames (stdin data when asked,
// EOF, kill). It returns once the keeper said the child is starting, or
// with its reason why not (no such cwd, no such executable).
func (p *Provider) Exec(ctx context.Context, sandboxID string, req provider.ExecRequest) (_ provider.Process, err error) {
	if err := provider.RefuseUnannounced(p.Info(), &req, nil); err != nil {
		return nil, err
	}
	if err := validateExec(req); err != nil {
		return nil, err
	}
	if _, gone := p.terminated.Load(sandboxID); gone || !validID(sandboxID) {
		return nil, notFound(sandboxID)
	}
	if p.channel {
		pc, ok, err := p.channelFor(ctx, sandboxID)
		if err != nil {
			return nil, err
		}
		if ok {
			return p.execChannel(ctx, sandboxID, pc, req)
		}
		if req.TTY != nil || req.User != "" {
			return nil, protocol.Errorf(protocol.KindInvalidRequest, "exec tty and user: sandbox %s was made with --provider-opt exec=exec (its keeper serves no channel)", sandboxID)
		}
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	run := keeper.Run{Token: keeper.NewToken(), Stdin: req.Stdin, Exclusive: req.Exclusive, Relay: true, EnvStdin: true}
	if req.Cwd != "" {
		run.Cwd = path.Join("/", req.Cwd)
	}
	run.Deadline = req.KillAt(ctx)
	if req.Exclusive {
		undo := p.running.evict(sandboxID)
		defer func() {
			if err != nil {
				undo()
			}
		}()
	}
	var env bytes.Buffer
	if err := keeper.WriteEnv(&env, execEnv(req.Env)); err != nil {
		return nil, err
	}
	proc, st, err := p.startRun(cctx, sandboxID, run, req, env.Bytes(), false)
	if errors.Is(err, errStartStalled) {
		// A WebSocket exec through the API server's stream translator was
		// seen to stall before the command existed (no status line) under
		// load; SPDY is proxied as is. Nothing started: the stalled stream
		// is dropped (a keeper that starts late sees its control stream
		// end and kills what it started), and the run is retried once, with
		// a token of its own, over SPDY.
		run.Token = keeper.NewToken()
		proc, st, err = p.startRun(cctx, sandboxID, run, req, env.Bytes(), true)
	}
	if err != nil {
		return nil, p.explainExecFailure(ctx, sandboxID, err)
	}
	proc.oomBefore = st.OOMKills
	proc.stopKill = context.AfterFunc(ctx, proc.kill)
	p.running.add(proc)
	return proc, nil
}

// startStall bounds how long a WebSocket exec may take to say the command
// is starting before it is retried over SPDY (see Exec).
const startStall = 10 * time.Second

var errStartStalled = errors.New("exec start stalled")

// startRun starts one keeper run and waits for its status line.
func (p *Provider) startRun(cctx context.Context, sandboxID string, run keeper.Run, req provider.ExecRequest, env []byte, spdyOnly bool) (*process, keeper.Status, error) {
	exec, err := p.executor(sandboxID, containerSandbox, run.Command(req.Argv), false)
	if spdyOnly {
		exec, err = p.spdyExecutor(sandboxID, containerSandbox, run.Command(req.Argv), false)
	}
	if err != nil {
		return nil, keeper.Status{}, classify(cctx, "exec", err)
	}
	proc := newProcess(p, sandboxID, run.Token, req.Stdin)
	proc.start(exec)
	// The keeper reads the environment before it says anything; a stream
	// that fails before taking it ends, and awaitStatus says why.
	go func() { _, _ = proc.ours.Write(env) }()
	sctx, cancel := cctx, context.CancelFunc(func() {})
	if !spdyOnly {
		sctx, cancel = context.WithTimeoutCause(cctx, startStall, errStartStalled)
	}
	defer cancel()
	st, err := proc.awaitStatus(sctx)
	if err != nil {
		proc.abandon()
		if context.Cause(sctx) == errStartStalled && cctx.Err() == nil {
			return nil, keeper.Status{}, errStartStalled
		}
		return nil, keeper.Status{}, err
	}
	return proc, st, nil
}

func validateExec(req provider.ExecRequest) error {
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return protocol.Errorf(protocol.KindInvalidRequest, "exec: argv must not be empty")
	}
	for _, a := range append(slices.Clone(req.Argv), req.Cwd) {
		if strings.ContainsRune(a, 0) {
			return protocol.Errorf(protocol.KindInvalidRequest, "exec: argv and cwd must not contain NUL")
		}
	}
	for k, v := range req.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return protocol.Errorf(protocol.KindInvalidRequest, "exec: env %q: names must be non-empty without '=' or NUL, values without NUL", k)
		}
	}
	return nil
}

func execEnv(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// statusLine reads the keeper's status line off stdout; what follows is
// the command's output.
func statusLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for len(line) < keeperproto.MaxStatusLine {
		b, err := r.ReadByte()
		if err != nil {
			return line, err
		}
		line = append(line, b)
		if b == '\n' {
			return line, nil
		}
	}
	return line, nil
}
