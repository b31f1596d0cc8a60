package kubernetes

import (
	"context"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/keeperexec"
)

var _ provider.Detacher = (*Provider)(nil)

// Detached execs are the keeper's: it holds them, their output ring and
// their exit status whatever happens to the attach stream or the
// resident, so they need a channel pod (modeChannel).

// StartDetached starts req as the detached exec req.ID; ctx bounds the
// start only.
func (p *Provider) StartDetached(ctx context.Context, sandboxID string, req provider.ExecRequest) error {
	if err := provider.RefuseUnannounced(p.Info(), &req, nil); err != nil {
		return err
	}
	if err := validateExec(req); err != nil {
		return err
	}
	pc, err := p.detachChannel(ctx, sandboxID)
	if err != nil {
		return err
	}
	spec := p.channelSpec(pc, req)
	spec.Detach, spec.ID, spec.Deadline, spec.Buffer = true, req.ID, req.Deadline, keeperproto.DefaultRing
	e, err := pc.conn.Exec(ctx, spec)
	if err != nil {
		return p.explainExecFailure(ctx, sandboxID, keeperexec.StartError(err))
	}
	_ = e.Release() // the exec goes on; an Attach reads it
	return nil
}

// Attach streams a detached exec's output from offset.
func (p *Provider) Attach(ctx context.Context, sandboxID, execID string, offset int64) (provider.Attachment, error) {
	pc, err := p.detachChannel(ctx, sandboxID)
	if err != nil {
		return nil, err
	}
	e, info, err := pc.conn.Attach(ctx, execID, offset)
	if err != nil {
		return nil, p.explainExecFailure(ctx, sandboxID, keeperexec.DetachError(execID, err))
	}
	return keeperexec.NewAttachment(e, info, offset, false /* the keeper says (attach_stdin) */), nil
}

// ListExecs lists the sandbox's detached execs, running or ended.
func (p *Provider) ListExecs(ctx context.Context, sandboxID string) ([]protocol.ExecInfo, error) {
	pc, err := p.detachChannel(ctx, sandboxID)
	if err != nil {
		return nil, err
	}
	execs, err := pc.conn.ListExecs(ctx)
	if err != nil {
		return nil, p.explainExecFailure(ctx, sandboxID, keeperexec.DetachError("", err))
	}
	return keeperexec.ExecInfos(execs), nil
}

// KillExec kills a detached exec's whole tree.
func (p *Provider) KillExec(ctx context.Context, sandboxID, execID string) error {
	pc, err := p.detachChannel(ctx, sandboxID)
	if err != nil {
		return err
	}
	if err := pc.conn.KillExec(ctx, execID); err != nil {
		return p.explainExecFailure(ctx, sandboxID, keeperexec.DetachError(execID, err))
	}
	return nil
}

// detachChannel is the channel of a sandbox whose detached execs are
// asked about; a pod made in exec mode has none.
func (p *Provider) detachChannel(ctx context.Context, sandboxID string) (podChannel, error) {
	pc, ok, err := p.channelFor(ctx, sandboxID)
	if err != nil {
		return podChannel{}, err
	}
	if !ok {
		return podChannel{}, protocol.Errorf(protocol.KindInvalidRequest, "exec detach: sandbox %s was made with --provider-opt exec=exec (its keeper serves no channel), so no keeper holds detached execs", sandboxID)
	}
	return pc, nil
}
