//go:build linux

package local

import (
	"cmp"
	"context"
	"errors"
	"io"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
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
	oomBefore := oomKills(si.cgroups)
	e, err := conn.Exec(ctx, spec)
	if err != nil {
		return nil, p.goneOr(id, p.execStartError(m, si, err))
	}
	pr := &channelProcess{exec: e, ns: si.ns, cgroups: si.cgroups, oomBefore: oomBefore}
	pr.stopKill = context.AfterFunc(ctx, func() {
		pr.killedByHost.Store(true)
		_ = e.Kill()
	})
	if req.TTY != nil {
		return &terminalProcess{pr}, nil
	}
	return pr, nil
}

// initEndGrace is how long a broken channel waits to see whether the
// sandbox's init is ending (terminate, lifetime) rather than the channel
// alone failing.
const initEndGrace = 2 * time.Second

// terminalProcess is an exec on a pseudo-terminal the keeper allocated:
// its output is all on Stdout, and its window can be resized.
type terminalProcess struct{ *channelProcess }

var _ provider.Resizer = (*terminalProcess)(nil)

func (pr *terminalProcess) Resize(size protocol.WindowSize) error {
	if err := pr.exec.Resize(size.Rows, size.Cols); err != nil {
		return &protocol.Error{Kind: protocol.KindTransient, Msg: "exec resize", Err: err}
	}
	return nil
}

// execSpec is req as the keeper runs it: the whole environment, cwd as
// the sandbox sees it (from the root, spec.workdir by default).
func execSpec(m *meta, req provider.ExecRequest) channel.ExecSpec {
	cwd := req.Cwd
	if cwd == "" {
		cwd = m.Spec.Workdir
	}
	spec := channel.ExecSpec{
		Argv:      req.Argv,
		Env:       buildEnv(m.Spec.Env, req.Env, "/"),
		Cwd:       path.Clean("/" + strings.TrimPrefix(sandboxRel(cwd), ".")),
		User:      cmp.Or(req.User, m.Spec.User), // resolved by the keeper in the sandbox's /etc/passwd
		Stdin:     req.Stdin,
		Exclusive: req.Exclusive,
	}
	if req.TTY != nil {
		spec.TTY = &channel.WindowSize{Rows: req.TTY.Rows, Cols: req.TTY.Cols}
	}
	return spec
}

// execStartError maps why the keeper did not start an exec to the
// protocol's kinds, as the unisolated path says them.
func (p *Provider) execStartError(m *meta, si *sandboxInit, err error) error {
	var se *channel.StartError
	switch {
	case pidsFull(si.cgroups) && (!errors.As(err, &se) || se.Reason == ""):
		// As on Docker, an exec that does not fit in pids_limit is quota.
		return protocol.Errorf(protocol.KindQuota, "exec: the sandbox's pids_limit (%d) is full: %v", m.Spec.PidsLimit, err)
	case errors.As(err, &se):
		return startError(se)
	case errors.Is(err, channel.ErrBroken):
		return &protocol.Error{Kind: protocol.KindTransient, Msg: "exec: the sandbox's channel broke", Err: err}
	}
	return err
}

// startError is a start the keeper refused, in the protocol's reasons
// (no_such_file, permission_denied, ... with the field they are about),
// or its kind for a request wrong in itself.
func startError(se *channel.StartError) error {
	if reason := protocol.Reason(se.Reason); reason.Known() {
		return protocol.ReasonError(reason, se.Field, se.Error(), nil)
	}
	kind := protocol.Kind(se.Kind)
	if !kind.Known() {
		kind = protocol.KindInvalidRequest
	}
	return &protocol.Error{Kind: kind, Msg: se.Error()}
}

// initError is a failed start of the sandbox's init, as the host sees it.
func initError(err error) error {
	var setupErr *setupError
	if errors.As(err, &setupErr) {
		return &protocol.Error{Kind: protocol.KindTransient, Msg: "the sandbox's init", Err: err}
	}
	return err
}

// channelProcess is an exec the keeper runs.
type channelProcess struct {
	exec         *channel.Exec
	ns           *pidNamespace // the sandbox's, when the exec started
	cgroups      []string
	oomBefore    int64
	stopKill     func() bool
	killedByHost atomic.Bool // the exec's context ended: the host's kill or timeout, not an exclusive exec
}

var _ provider.Process = (*channelProcess)(nil)

func (pr *channelProcess) Stdout() io.Reader { return pr.exec.Stdout() }
func (pr *channelProcess) Stderr() io.Reader { return pr.exec.Stderr() }

func (pr *channelProcess) Stdin() io.WriteCloser {
	if w := pr.exec.Stdin(); w != nil {
		return w
	}
	return nil // a nil writer in the interface would not be nil
}

// Wait returns the status the keeper sent after the exec's last output.
// Killed is an exclusive exec's doing only: the resident knows its own
// kills. A broken channel is transient: the exec died with it.
func (pr *channelProcess) Wait() (provider.ExitStatus, error) {
	st, err := pr.exec.Wait()
	pr.stopKill()
	// The socket's end can come before the init's exit is seen: the kernel
	// closes a dying process's files before it notifies its pidfd.
	if err != nil && errors.Is(err, channel.ErrBroken) && !errors.Is(err, channel.ErrFenced) && pr.ns.awaitEnd(initEndGrace) {
		// The sandbox ended under the exec (terminate, its lifetime): its
		// every process died by SIGKILL with the namespace.
		return provider.ExitStatus{Code: 128 + 9, Signal: "SIGKILL"}, nil
	}
	if err != nil {
		if errors.Is(err, channel.ErrFenced) {
			return provider.ExitStatus{}, &protocol.Error{Kind: protocol.KindTransient, Msg: "exec: another resident took this sandbox's channel over; the exec was killed", Err: err}
		}
		if errors.Is(err, channel.ErrBroken) {
			return provider.ExitStatus{}, &protocol.Error{Kind: protocol.KindTransient, Msg: "exec: the sandbox's channel broke; the exec was killed", Err: err}
		}
		return provider.ExitStatus{}, err
	}
	out := provider.ExitStatus{Code: st.Code, Signal: st.Signal, OOMKilled: st.OOMKilled}
	out.Killed = st.Killed && !st.TimedOut && !pr.killedByHost.Load()
	// The keeper sees no cgroup (the sandbox has no /sys): the resident
	// reads the sandbox's OOM count, as before. 137 is also a shell whose
	// child the limit killed.
	if (st.Signal == "SIGKILL" || st.Code == 128+9) && pr.oomBefore >= 0 && oomKills(pr.cgroups) > pr.oomBefore {
		out.OOMKilled = true
	}
	return out, nil
}
