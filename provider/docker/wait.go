package docker

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Wait returns when the exec's main process (the keeper, which exits with
// its child) has exited and the output is drained. Completion is decided by
// the engine's exec state, not by the end of the stream: a background child
// holding stdout open delays Wait by at most timing.drainIdle once it is
// silent (timing.drainMax in all). Every engine call is bounded: an engine
// unreachable for timing.engineGrace makes Wait return a transient error.
func (pr *process) Wait() (provider.ExitStatus, error) {
	pr.waitOnce.Do(func() {
		pr.status, pr.err = pr.wait()
		pr.p.running.remove(pr)
		if pr.evicted.Load() && pr.err == nil && pr.status.Signal == "SIGKILL" {
			pr.status.Killed = true // by an exclusive exec beside it
		}
		pr.finish()
	})
	return pr.status, pr.err
}

func (pr *process) wait() (provider.ExitStatus, error) {
	t := pr.p.timing
	pause := 10 * time.Millisecond
	streamEnded := false
	var unreachableSince time.Time
	fallbackSent := false
	for {
		// Until the stream ends, its end is the likely moment of exit;
		// after that, only the clock. The engine marks the exec done about
		// a millisecond after the stream closes, so the first look is at
		// once and the next ones from half a millisecond up, rather than a
		// full back-off step past it. The stream may well have ended
		// before Wait was called (a short command, readers that were
		// quick): that counts as the end too.
		switch {
		case !streamEnded && closed(pr.demux.done):
			streamEnded, pause = true, time.Millisecond/2
		case !streamEnded:
			timer := time.NewTimer(pause)
			select {
			case <-pr.demux.done:
				timer.Stop()
				streamEnded, pause = true, time.Millisecond/2
			case <-timer.C:
				pause = min(pause*2, t.poll)
			}
		default:
			time.Sleep(pause)
			pause = min(pause*2, t.poll)
		}
		if streamEnded && errors.Is(pr.demux.Err(), errStreamCorrupt) {
			return pr.corrupted()
		}
		attempt := time.Now()
		ctx, cancel := context.WithTimeoutCause(context.Background(), min(t.api, t.engineGrace), errEngineTimeout)
		ins, err := pr.p.cli.ExecInspect(ctx, pr.exec, client.ExecInspectOptions{})
		cancel()
		switch {
		case err == nil && !ins.Running:
			pr.drain()
			return pr.exitStatus(ins.ExitCode), nil
		case err == nil:
			unreachableSince = time.Time{}
		case cerrdefs.IsNotFound(err):
			return pr.gone()
		default:
			if unreachableSince.IsZero() {
				unreachableSince = attempt
			}
			if time.Since(unreachableSince) >= t.engineGrace {
				return provider.ExitStatus{}, protocol.Errorf(protocol.KindTransient, "exec: docker engine unreachable for %s: %v", t.engineGrace, err)
			}
		}
		at := pr.killedAt.Load()
		if at != 0 && time.Since(time.Unix(0, at)) >= t.killWait+t.engineGrace {
			return provider.ExitStatus{}, protocol.Errorf(protocol.KindTransient, "exec: still running %s after the kill", t.killWait+t.engineGrace)
		}
		if at != 0 && !fallbackSent && time.Since(time.Unix(0, at)) >= t.killWait {
			// The kill frame did not end it (a stdin write may hold the
			// connection): kill from a second exec.
			fallbackSent = true
			go func() {
				_, err := pr.p.runKeeper(context.Background(), pr.sandbox, keeperproto.CmdKill, "-token", pr.token)
				if err != nil {
					pr.p.log.Warn("exec kill fallback failed", zap.String("sandbox", pr.sandbox[:12]), zap.Error(err))
				}
			}()
		}
	}
}

// corrupted ends an exec whose stream broke the framing: the kill frame,
// then finish closes the connection, and the keeper, whose control stream
// ends, kills every process of the exec. Only this exec: its stream is its
// own. Transient, because the host may run the command again; it says
// nothing about how the command did.
func (pr *process) corrupted() (provider.ExitStatus, error) {
	pr.kill()
	return provider.ExitStatus{}, protocol.Errorf(protocol.KindTransient, "exec: %v; the exec was killed", pr.demux.Err())
}

// drain lets buffered output through after the main process exited: until
// the stream ends, or goes quiet for drainIdle, or drainMax passes.
func (pr *process) drain() {
	t := pr.p.timing
	deadline := time.Now().Add(t.drainMax)
	for time.Now().Before(deadline) {
		last := pr.activity.Load()
		if last > 0 && time.Since(time.Unix(0, last)) >= t.drainIdle {
			return
		}
		timer := time.NewTimer(t.drainIdle / 4)
		select {
		case <-pr.demux.done:
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// gone: the engine no longer knows the exec. If the sandbox is gone too it
// was terminated under the exec, which counts as a kill; otherwise the
// engine lost the exec (it restarted), which the host may retry.
func (pr *process) gone() (provider.ExitStatus, error) {
	ctx, cancel := pr.p.callCtx(context.Background())
	defer cancel()
	c, err := pr.p.cli.ContainerInspect(ctx, pr.sandbox, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) || (err == nil && c.Container.State != nil && !c.Container.State.Running) {
		return provider.ExitStatus{Code: keeperproto.KilledExitCode, Signal: "SIGKILL"}, nil
	}
	return provider.ExitStatus{}, protocol.Errorf(protocol.KindTransient, "exec: the docker engine lost the exec (did it restart?)")
}

// exitStatus turns the keeper's exit code into a status. 128+n is read as
// signal n, as shells do; 137 with a grown OOM-kill counter is an OOM kill.
func (pr *process) exitStatus(code int) provider.ExitStatus {
	st := provider.ExitStatus{Code: code}
	if code > 128 && code < 128+32 {
		st.Signal = unix.SignalName(unix.Signal(code - 128))
	}
	// After our own kill, 137 is the keeper's report of it, not the OOM
	// killer's; an exec that ended by itself just before keeps its code.
	if code == keeperproto.KilledExitCode && !pr.killed.Load() {
		st.OOMKilled = pr.oomKilled()
	}
	return st
}

// oomKilled compares the sandbox's OOM-kill counter with the value the
// keeper read when the exec started. Another exec's OOM kill in the same
// window would be counted too; the counter cannot tell them apart.
func (pr *process) oomKilled() bool {
	if pr.oomBefore < 0 {
		return false
	}
	out, err := pr.p.runKeeper(context.Background(), pr.sandbox, keeperproto.CmdOOM)
	if err != nil {
		return false
	}
	after, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	return err == nil && after > pr.oomBefore
}

// finish releases everything: the connection (which, if the keeper still
// runs, makes it kill its tree), and the demuxer, so the readers see EOF now.
func (pr *process) finish() {
	pr.stopKill()
	pr.demux.close()
	pr.hijack.Close()
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
