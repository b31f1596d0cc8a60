package docker

import (
	"context"
	"errors"
	"path"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/keeperexec"
)

// execChannel runs req in a channel-mode sandbox: one message on the
// sandbox's channel (no engine call once the channel is held). The keeper
// marks the exec, runs it as the user asked, kills its whole tree on a
// kill, on the exec's deadline, and when the channel that started it
// breaks or is taken over; its exit comes after its last output.
func (p *Provider) execChannel(ctx context.Context, sandboxID string, req provider.ExecRequest) (provider.Process, error) {
	ch, spec, conn, err := p.channelSpec(ctx, sandboxID, req)
	if err != nil {
		return nil, err
	}
	spec.Deadline = req.KillAt(ctx) // held by the keeper even if the resident goes
	var e *channel.Exec
	err = p.whileRunning(ctx, sandboxID, false, func(ctx context.Context) (err error) {
		e, err = conn.Exec(ctx, spec)
		if channel.NotSent(err) {
			// The held channel had broken unseen (its reader not yet at
			// the end): nothing ran, so once more on a new one.
			if ch, conn, err = p.channelFor(ctx, sandboxID); err != nil {
				return err
			}
			e, err = conn.Exec(ctx, spec)
		}
		return err
	})
	if err != nil {
		if protocol.KindOf(err) == protocol.KindConflict || protocol.KindOf(err) == protocol.KindNotFound {
			return nil, err // the sandbox is paused, stopped or gone
		}
		return nil, p.channelStartError(ctx, sandboxID, err)
	}
	return keeperexec.Wrap(ctx, e, req.TTY != nil, keeperexec.Hooks{
		// A channel that broke because the sandbox stopped (terminate, its
		// lifetime) ended the exec as the sandbox's every process: SIGKILL.
		SandboxEnded: func() bool { return p.stopsSoon(context.WithoutCancel(ctx), sandboxID) },
		OOMKilled:    func() bool { return p.oomGrew(context.WithoutCancel(ctx), ch, conn) },
	}), nil
}

// channelSpec is the sandbox's channel and req as its keeper runs it: the
// container's environment plus the exec's, cwd relative to "/" (the
// container's working directory by default), the sandbox's user by
// default.
func (p *Provider) channelSpec(ctx context.Context, sandboxID string, req provider.ExecRequest) (*chanHolder, channel.ExecSpec, *channel.Conn, error) {
	ch, conn, err := p.channelFor(ctx, sandboxID)
	if err != nil {
		return nil, channel.ExecSpec{}, nil, err
	}
	if req.Exclusive && !conn.Protected() {
		return nil, channel.ExecSpec{}, nil, protocol.Errorf(protocol.KindInvalidRequest, "exec exclusive: the sandbox's keeper runs unprotected (the image's user is not root), so it cannot stop every other process of the sandbox")
	}
	cwd := ch.dir
	if req.Cwd != "" {
		cwd = path.Join("/", req.Cwd) // relative to the root, never above it
	}
	return ch, keeperexec.Spec(req, channelEnv(ch.env, req.Env), cwd, ch.user), conn, nil
}

// channelStartError explains an exec the keeper did not start: its own
// reason (no such program, cwd or user), a full pids limit as quota, a
// sandbox that stopped under it.
func (p *Provider) channelStartError(ctx context.Context, sandboxID string, err error) error {
	mapped := keeperexec.StartError(err)
	var se *channel.StartError
	if errors.As(err, &se) && (se.Reason != "" || se.Kind == string(protocol.KindInvalidRequest) || se.Kind == string(protocol.KindConflict)) {
		return mapped // about the request itself
	}
	if full := p.pidsExhausted(ctx, sandboxID); full != nil {
		return full
	}
	if why := p.notRunning(context.WithoutCancel(ctx), sandboxID); why != nil {
		return why
	}
	return mapped
}
