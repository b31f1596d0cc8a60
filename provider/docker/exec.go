package docker

import (
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/internal/keeper"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Exec runs argv in a sandbox under the keeper ("keeper run"), over one
// hijacked Engine API connection: stdout and stderr demultiplexed and
// streamed as they come, the exec's stdin carrying the keeper's control
// frames (stdin data for the child when asked, EOF, kill). It returns once
// the keeper said the child is starting, or with the keeper's reason why it
// cannot (no such cwd, no such executable).
func (p *Provider) Exec(ctx context.Context, sandboxID string, req provider.ExecRequest) (_ provider.Process, err error) {
	if err := validateExec(req); err != nil {
		return nil, err
	}
	if err := provider.RefuseUnannounced(p.Info(), &req, nil); err != nil {
		return nil, err
	}
	// The start has one bound, however many engine calls it takes (an
	// inspect, the exec, its status, explaining a refusal); the run that
	// follows is bounded by ctx.
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	if !p.known.has(sandboxID) {
		if _, err := p.inspectSandbox(cctx, sandboxID); err != nil {
			return nil, err
		}
	}
	if p.modeOf(sandboxID) == ExecModeChannel {
		return p.execChannel(ctx, sandboxID, req)
	}
	if err := refuseOnExecPath(sandboxID, req); err != nil {
		return nil, err
	}
	run := keeper.Run{Token: keeper.NewToken(), Stdin: req.Stdin, Exclusive: req.Exclusive}
	if req.Cwd != "" {
		// Relative to the sandbox root, and never above it.
		run.Cwd = path.Join("/", req.Cwd)
	}
	// The keeper enforces the deadline itself too: it holds even when the
	// engine or the resident cannot reach it any more.
	run.Deadline = req.KillAt(ctx)
	cmd := run.Command(req.Argv)
	if req.Exclusive {
		undo := p.running.evict(sandboxID)
		defer func() {
			if err != nil {
				undo()
			}
		}()
	}

	created, err := p.cli.ExecCreate(cctx, sandboxID, client.ExecCreateOptions{
		Cmd: cmd, Env: execEnv(req.Env), AttachStdin: true, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return nil, p.execCreateFailed(cctx, cctx, sandboxID, err)
	}
	att, err := p.cli.ExecAttach(cctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, p.execRefused(cctx, sandboxID, classify(cctx, "exec start", err))
	}
	proc := newProcess(p, sandboxID, created.ID, run.Token, att.HijackedResponse, req.Stdin)
	st, err := proc.awaitStatus(cctx)
	if err != nil {
		proc.abandon()
		if full := p.pidsExhausted(cctx, sandboxID); full != nil {
			return nil, full
		}
		return nil, p.execRefused(cctx, sandboxID, classify(cctx, "exec start", err))
	}
	proc.oomBefore = st.OOMKills
	proc.stopKill = context.AfterFunc(ctx, proc.kill)
	p.running.add(proc)
	return proc, nil
}

// execCreateFailed explains a refused exec create. Whether the sandbox runs
// is checked only here, on the failure path: the engine refuses an exec in a
// stopped or paused container with a conflict, and the inspect that says
// which costs nothing on the way of an exec that works.
func (p *Provider) execCreateFailed(ctx, cctx context.Context, sandboxID string, err error) error {
	switch {
	case cerrdefs.IsNotFound(err):
		p.known.forget(sandboxID)
		return notFound(sandboxID)
	case !cerrdefs.IsConflict(err):
		return classify(cctx, "exec create", err)
	}
	c, inspectErr := p.inspectSandbox(ctx, sandboxID)
	if inspectErr != nil {
		return inspectErr
	}
	if notRunning := p.checkRunning(sandboxID, c); notRunning != nil {
		return notRunning // expired, stopped or paused
	}
	return classify(cctx, "exec create", err)
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

// execEnv passes the environment through the API, never on a command line
// (where `ps` would show it). It adds to the container's env (spec.env,
// the image's ENV) and overrides it.
func execEnv(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// runKeeper runs a short keeper command in a sandbox and returns its
// stdout (at most 4 KiB): the kill fallback and the OOM counter use it.
func (p *Provider) runKeeper(ctx context.Context, sandboxID string, args ...string) (string, error) {
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	created, err := p.cli.ExecCreate(cctx, sandboxID, client.ExecCreateOptions{Cmd: keeper.Command(args...), AttachStdout: true, AttachStderr: true})
	if err != nil {
		return "", classify(cctx, "keeper "+args[0], err)
	}
	att, err := p.cli.ExecAttach(cctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return "", classify(cctx, "keeper "+args[0], err)
	}
	defer att.Close()
	stop := context.AfterFunc(cctx, att.Close)
	defer stop()
	var out, errOut lockedBuffer
	if _, err := stdcopy.StdCopy(&out, &errOut, io.LimitReader(att.Reader, 1<<20)); err != nil {
		return "", classify(cctx, "keeper "+args[0], fmt.Errorf("%w (%s)", err, errOut.String()))
	}
	return out.String(), nil
}
