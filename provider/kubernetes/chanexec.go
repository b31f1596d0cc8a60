package kubernetes

import (
	"cmp"
	"context"
	"strings"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/keeperexec"
)

// execChannel runs req over the pod's keeper channel: one Exec message,
// no API server call of its own. The keeper resolves argv[0], cwd and the
// user inside the sandbox, marks the exec's processes and kills the whole
// tree on Kill, at the deadline, and when the channel breaks.
func (p *Provider) execChannel(ctx context.Context, id string, pc podChannel, req provider.ExecRequest) (provider.Process, error) {
	if req.Exclusive && !pc.conn.Protected() {
		return nil, keeperexec.ErrUnprotectedExclusive
	}
	start := func(pc podChannel) (*channel.Exec, error) {
		spec := p.channelSpec(pc, req)
		spec.Deadline = req.KillAt(ctx)
		return pc.conn.Exec(ctx, spec)
	}
	e, err := start(pc)
	if channel.NotSent(err) {
		// The held channel had broken unseen (its reader not yet at the
		// end): nothing ran, so once more on a new one.
		next, ok, cerr := p.channelFor(ctx, id)
		if cerr != nil || !ok {
			return nil, cmp.Or(cerr, keeperexec.StartError(err))
		}
		e, err = start(next)
	}
	if err != nil {
		return nil, p.explainExecFailure(ctx, id, keeperexec.StartError(err))
	}
	return keeperexec.Wrap(ctx, e, req.TTY != nil, keeperexec.Hooks{SandboxEnded: func() bool { return p.sandboxEnded(id) }}), nil
}

// channelSpec is req as the keeper runs it: the container's environment
// (the keeper's own, as an exec subresource process would inherit it)
// with req's laid over it, in the container's working directory unless
// req names one, as spec.user unless req names a user.
func (p *Provider) channelSpec(pc podChannel, req provider.ExecRequest) channel.ExecSpec {
	return keeperexec.Spec(req, mergeEnv(pc.conn.Env(), execEnv(req.Env)), pc.cwdOf(req.Cwd), pc.user)
}

// mergeEnv is base with extra laid over it: a name in both takes extra's
// value, where base had it (as "keeper run" merges).
func mergeEnv(base, extra []string) []string {
	at := map[string]int{}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range append(base, extra...) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := at[k]; ok {
			out[i] = kv
			continue
		}
		at[k] = len(out)
		out = append(out, kv)
	}
	return out
}

// sandboxEnded: the sandbox was terminated, or its pod is gone or no
// longer runs.
func (p *Provider) sandboxEnded(id string) bool {
	if _, gone := p.terminated.Load(id); gone {
		return true
	}
	ctx, cancel := p.callCtx(context.Background())
	defer cancel()
	pod, err := p.getSandbox(ctx, id)
	if err != nil {
		return protocol.KindOf(err) == protocol.KindNotFound
	}
	return p.checkRunning(pod) != nil
}
