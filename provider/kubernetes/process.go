package kubernetes

import (
	"bufio"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/resident-dev/resident/internal/keeper"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// process is one running exec: the stream runs in its own goroutine, its
// output flows through synchronous pipes straight to the resident's
// readers (backpressure reaches the API server), its stdin is the
// keeper's control stream.
type process struct {
	p            *Provider
	sandbox      string
	token        string
	ours, theirs net.Conn // control stream: we write ours, the executor reads theirs
	ctrl         *keeper.Control
	stdin        *keeper.StdinWriter
	outR, errR   *io.PipeReader
	outW, errW   *io.PipeWriter
	stdout       *bufio.Reader
	done         chan struct{} // the stream ended; streamErr is set
	streamErr    error
	cancelStream context.CancelFunc
	oomBefore    int64
	stopKill     func() bool
	killed       atomic.Bool
	evicted      atomic.Bool
	startOnce    sync.Once
	waitOnce     sync.Once
	status       provider.ExitStatus
	err          error
}

func newProcess(p *Provider, sandbox, token string, withStdin bool) *process {
	pr := &process{p: p, sandbox: sandbox, token: token, done: make(chan struct{}), stopKill: func() bool { return true }}
	pr.ours, pr.theirs = net.Pipe()
	pr.ctrl = keeper.NewControl(pr.ours)
	pr.outR, pr.outW = io.Pipe()
	pr.errR, pr.errW = io.Pipe()
	pr.stdout = bufio.NewReaderSize(pr.outR, 32<<10)
	if withStdin {
		pr.stdin = keeper.NewStdinWriter(pr.ctrl)
	}
	return pr
}

// start runs the stream in its own goroutine.
func (pr *process) start(exec remotecommand.Executor) {
	pr.startOnce.Do(func() {
		ctx, cancel := streamCtx()
		pr.cancelStream = cancel
		go func() {
			err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: pr.theirs, Stdout: pr.outW, Stderr: pr.errW})
			pr.streamErr = err
			close(pr.done)
			pr.outW.Close()
			pr.errW.Close()
			pr.ours.Close()
			cancel()
		}()
	})
}

func (pr *process) Stdout() io.Reader { return pr.stdout }
func (pr *process) Stderr() io.Reader { return pr.errR }

func (pr *process) Stdin() io.WriteCloser {
	if pr.stdin == nil {
		return nil
	}
	return pr.stdin
}

// awaitStatus reads the keeper's status line; a stream that ends first
// (the exec was refused) says why in its error.
func (pr *process) awaitStatus(ctx context.Context) (keeper.Status, error) {
	type result struct {
		line []byte
		err  error
	}
	got := make(chan result, 1)
	go func() {
		line, err := statusLine(pr.stdout)
		got <- result{line, err}
	}()
	select {
	case r := <-got:
		if len(r.line) == 0 {
			<-pr.done
			if _, ok := exitCode(pr.streamErr); !ok {
				return keeper.Status{}, classify(ctx, "exec", pr.streamErr)
			}
		}
		return keeper.ParseStatus(r.line)
	case <-ctx.Done():
		pr.abandon()
		return keeper.Status{}, classify(ctx, "exec start", context.Cause(ctx))
	}
}

// abandon ends an exec that never got going: the keeper sees its control
// stream end and kills whatever it started.
func (pr *process) abandon() {
	pr.ours.Close()
	if pr.cancelStream != nil {
		pr.cancelStream()
	}
	pr.outR.Close()
	pr.errR.Close()
}

// kill asks the keeper to kill the tree; if the exec has not ended
// killWait later, a second exec runs "keeper kill", and past the API
// call bound the stream is cut (the keeper then kills the tree itself).
func (pr *process) kill() {
	if !pr.killed.CompareAndSwap(false, true) {
		return
	}
	_ = pr.ctrl.Kill(pr.p.timing.killWait)
	go func() {
		select {
		case <-pr.done:
			return
		case <-time.After(pr.p.timing.killWait):
		}
		ctx, cancel := context.WithTimeout(context.Background(), pr.p.timing.api)
		defer cancel()
		_, _ = pr.p.runKeeper(ctx, pr.sandbox, nil, keeperproto.CmdKill, "-token", pr.token)
		select {
		case <-pr.done:
		case <-ctx.Done():
			pr.cancelStream()
		}
	}()
}

// Wait returns when the keeper (which ends after its child, relaying the
// child's output) has exited and the stream is drained.
func (pr *process) Wait() (provider.ExitStatus, error) {
	pr.waitOnce.Do(func() {
		<-pr.done
		pr.stopKill()
		pr.p.running.remove(pr)
		pr.status, pr.err = pr.exitStatus()
		if pr.evicted.Load() && pr.err == nil && pr.status.Signal == "SIGKILL" {
			pr.status.Killed = true
		}
	})
	return pr.status, pr.err
}

func (pr *process) exitStatus() (provider.ExitStatus, error) {
	code, ok := exitCode(pr.streamErr)
	if !ok {
		return provider.ExitStatus{}, &protocol.Error{Kind: protocol.KindTransient, Msg: "exec stream broke", Err: pr.streamErr}
	}
	st := provider.ExitStatus{Code: code}
	if code > 128 && code < 128+65 {
		st.Signal = unix.SignalName(unix.Signal(code - 128))
	}
	if code == keeperproto.KilledExitCode && !pr.killed.Load() && pr.oomBefore >= 0 {
		ctx, cancel := context.WithTimeout(context.Background(), pr.p.timing.api)
		defer cancel()
		if out, err := pr.p.runKeeper(ctx, pr.sandbox, nil, keeperproto.CmdOOM); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64); err == nil && n > pr.oomBefore {
				st.OOMKilled = true
			}
		}
	}
	return st, nil
}
