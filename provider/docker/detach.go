package docker

import (
	"context"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/keeperexec"
)

// Detached execs are the keeper's: it holds them, their output ring and
// their exit status whatever happens to the channel or the resident, so
// only a channel-mode sandbox has them.

// StartDetached starts req as the detached exec req.ID; ctx bounds the
// start only.
func (p *Provider) StartDetached(ctx context.Context, sandboxID string, req provider.ExecRequest) error {
	if err := validateExec(req); err != nil {
		return err
	}
	if err := provider.RefuseUnannounced(p.Info(), &req, nil); err != nil {
		return err
	}
	req.Detach = true
	if err := p.detachable(ctx, sandboxID, req); err != nil {
		return err
	}
	_, spec, conn, err := p.channelSpec(ctx, sandboxID, req)
	if err != nil {
		return err
	}
	spec.Detach, spec.ID, spec.Deadline, spec.Buffer = true, req.ID, req.Deadline, keeperproto.DefaultRing
	e, err := conn.Exec(ctx, spec)
	if err != nil {
		return p.channelStartError(ctx, sandboxID, err)
	}
	_ = e.Release() // the exec goes on; an Attach reads it
	return nil
}

// Attach streams a detached exec's output from offset.
func (p *Provider) Attach(ctx context.Context, sandboxID, execID string, offset int64) (provider.Attachment, error) {
	conn, err := p.detachChannel(ctx, sandboxID)
	if err != nil {
		return nil, err
	}
	e, info, err := conn.Attach(ctx, execID, offset)
	if err != nil {
		return nil, keeperexec.DetachError(execID, err)
	}
	return keeperexec.NewAttachment(e, info, offset, false /* the keeper says */), nil
}

// ListExecs lists the sandbox's detached execs, running or ended.
func (p *Provider) ListExecs(ctx context.Context, sandboxID string) ([]protocol.ExecInfo, error) {
	conn, err := p.detachChannel(ctx, sandboxID)
	if err != nil {
		return nil, err
	}
	execs, err := conn.ListExecs(ctx)
	if err != nil {
		return nil, keeperexec.DetachError("", err)
	}
	return keeperexec.ExecInfos(execs), nil
}

// KillExec kills a detached exec's whole tree.
func (p *Provider) KillExec(ctx context.Context, sandboxID, execID string) error {
	conn, err := p.detachChannel(ctx, sandboxID)
	if err != nil {
		return err
	}
	return keeperexec.DetachError(execID, conn.KillExec(ctx, execID))
}

// detachable refuses a detached call for a sandbox on the exec path.
func (p *Provider) detachable(ctx context.Context, sandboxID string, req provider.ExecRequest) error {
	if !p.known.has(sandboxID) {
		cctx, cancel := p.callCtx(ctx)
		defer cancel()
		if _, err := p.inspectSandbox(cctx, sandboxID); err != nil {
			return err
		}
	}
	if p.modeOf(sandboxID) != ExecModeChannel {
		return refuseOnExecPath(sandboxID, req)
	}
	return nil
}

// detachChannel is the channel of a sandbox whose detached execs are
// asked about.
func (p *Provider) detachChannel(ctx context.Context, sandboxID string) (*channel.Conn, error) {
	if err := p.detachable(ctx, sandboxID, provider.ExecRequest{Detach: true}); err != nil {
		return nil, err
	}
	_, conn, err := p.channelFor(ctx, sandboxID)
	return conn, err
}
