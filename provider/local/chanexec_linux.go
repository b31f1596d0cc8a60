//go:build linux

package local

import (
	"context"
	"errors"
	"path"
	"strings"
	"time"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/keeperexec"
)

// execIsolated runs req in the sandbox's namespaces through its keeper:
// one message on the channel, no bwrap and no fork in the resident. The
// keeper marks the exec (a supplementary group its processes cannot
// drop), so the tree kill finds every process it started, whatever they
// did to their ancestry; it resolves argv[0] and cwd inside the sandbox.
func (p *Provider) execIsolated(ctx context.Context, id string, m *meta, req provider.ExecRequest) (provider.Process, error) {
	si, conn, err := p.channelFor(ctx, id, m)
	if err != nil {
		return nil, p.goneOr(id, initError(err))
	}
	if req.Exclusive && !conn.Protected() {
		// Without its own uid and marks (a keeper not started as root) the
		// keeper cannot find every process of the sandbox.
		return nil, protocol.Errorf(protocol.KindInvalidRequest, "exec exclusive: the sandbox's keeper runs unprotected here (the resident is not root), so it cannot stop every other process of the sandbox")
	}
	spec := execSpec(m, req)
	spec.Deadline = req.KillAt(ctx) // held by the keeper even if the resident goes
	oomBefore := oomKills(si.cgroups)
	e, err := conn.Exec(ctx, spec)
	if channel.NotSent(err) {
		// The held channel had broken unseen (its reader not yet at the
		// end): nothing ran, so once more on a new one.
		if si, conn, err = p.channelFor(ctx, id, m); err != nil {
			return nil, p.goneOr(id, initError(err))
		}
		e, err = conn.Exec(ctx, spec)
	}
	if err != nil {
		return nil, p.goneOr(id, p.execStartError(m, si, err))
	}
	ns, cgroups := si.ns, si.cgroups
	return keeperexec.Wrap(ctx, e, req.TTY != nil, keeperexec.Hooks{
		// The socket's end can come before the init's exit is seen: the
		// kernel closes a dying process's files before it notifies its pidfd.
		SandboxEnded: func() bool { return ns.awaitEnd(initEndGrace) },
		// The keeper sees no cgroup (the sandbox has no /sys): the resident
		// reads the sandbox's OOM count, as before.
		OOMKilled: func() bool { return oomBefore >= 0 && oomKills(cgroups) > oomBefore },
	}), nil
}

// initEndGrace is how long a broken channel waits to see whether the
// sandbox's init is ending (terminate, lifetime) rather than the channel
// alone failing.
const initEndGrace = 2 * time.Second

// execSpec is req as the keeper runs it: the whole environment, cwd as
// the sandbox sees it (from the root, spec.workdir by default).
func execSpec(m *meta, req provider.ExecRequest) channel.ExecSpec {
	cwd := req.Cwd
	if cwd == "" {
		cwd = m.Spec.Workdir
	}
	cwd = path.Clean("/" + strings.TrimPrefix(sandboxRel(cwd), "."))
	return keeperexec.Spec(req, buildEnv(m.Spec.Env, req.Env, "/"), cwd, m.Spec.User)
}

// execStartError maps why the keeper did not start an exec to the
// protocol's kinds, as the unisolated path says them.
func (p *Provider) execStartError(m *meta, si *sandboxInit, err error) error {
	var se *channel.StartError
	if pidsFull(si.cgroups) && (!errors.As(err, &se) || se.Reason == "") {
		// As on Docker, an exec that does not fit in pids_limit is quota.
		return protocol.Errorf(protocol.KindQuota, "exec: the sandbox's pids_limit (%d) is full: %v", m.Spec.PidsLimit, err)
	}
	return keeperexec.StartError(err)
}

// initError is a failed start of the sandbox's init, as the host sees it.
func initError(err error) error {
	var setupErr *setupError
	if errors.As(err, &setupErr) {
		return &protocol.Error{Kind: protocol.KindTransient, Msg: "the sandbox's init", Err: err}
	}
	return err
}
