package keeperexec

import (
	"context"
	"errors"
	"io"
	"sync/atomic"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Hooks are what the provider knows of an exec's sandbox beyond the
// channel. Both may be nil.
type Hooks struct {
	// SandboxEnded is asked when the channel broke under the exec (not a
	// takeover): true when the sandbox itself ended meanwhile (terminate,
	// its lifetime), so that every process died by SIGKILL with it; it
	// may wait a little for the end to be seen.
	SandboxEnded func() bool
	// OOMKilled is asked whenever the exec ended by SIGKILL or 137 (a
	// shell whose child the limit killed exits 137; the keeper sees only
	// its main process): true when the sandbox's OOM count grew since the
	// exec started. The keeper's own OOMKilled stands either way.
	OOMKilled func() bool
}

// Wrap makes a started exec the provider's Process: killed (its whole
// tree, by the keeper) when ctx ends, a Resizer when it runs on a
// terminal.
func Wrap(ctx context.Context, e *channel.Exec, tty bool, hooks Hooks) provider.Process {
	pr := &Process{exec: e, hooks: hooks}
	pr.stopKill = context.AfterFunc(ctx, func() {
		pr.killedByHost.Store(true)
		_ = e.Kill()
	})
	if tty {
		return &TerminalProcess{pr}
	}
	return pr
}

// Process is an exec the keeper runs.
type Process struct {
	exec         *channel.Exec
	hooks        Hooks
	stopKill     func() bool
	killedByHost atomic.Bool // the exec's context ended: the host's kill or timeout, not an exclusive exec
}

var _ provider.Process = (*Process)(nil)

func (pr *Process) Stdout() io.Reader { return pr.exec.Stdout() }
func (pr *Process) Stderr() io.Reader { return pr.exec.Stderr() }

func (pr *Process) Stdin() io.WriteCloser {
	if w := pr.exec.Stdin(); w != nil {
		return w
	}
	return nil // a nil writer in the interface would not be nil
}

// Wait returns the status the keeper sent after the exec's last output.
// Killed is an exclusive exec's doing only: the resident knows its own
// kills. A broken channel is transient: the exec died with it.
func (pr *Process) Wait() (provider.ExitStatus, error) {
	st, err := pr.exec.Wait()
	pr.stopKill()
	if err != nil && errors.Is(err, channel.ErrBroken) && !errors.Is(err, channel.ErrFenced) && pr.hooks.SandboxEnded != nil && pr.hooks.SandboxEnded() {
		// The sandbox ended under the exec (terminate, its lifetime): its
		// every process died by SIGKILL with it.
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
	// 137 is also a shell whose child the limit killed.
	if (st.Signal == "SIGKILL" || st.Code == 128+9) && pr.hooks.OOMKilled != nil && pr.hooks.OOMKilled() {
		out.OOMKilled = true
	}
	return out, nil
}

// TerminalProcess is an exec on a pseudo-terminal the keeper allocated:
// its output is all on Stdout, and its window can be resized.
type TerminalProcess struct{ *Process }

var _ provider.Resizer = (*TerminalProcess)(nil)

func (pr *TerminalProcess) Resize(size protocol.WindowSize) error {
	if err := pr.exec.Resize(size.Rows, size.Cols); err != nil {
		return &protocol.Error{Kind: protocol.KindTransient, Msg: "exec resize", Err: err}
	}
	return nil
}
