package docker

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/internal/keeper"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/provider"
)

// process is one running exec. Its output flows from the hijacked
// connection through the demuxer straight into the resident's read
// buffers: the engine's stream is read only as fast as the resident reads.
type process struct {
	p             *Provider
	sandbox, exec string
	token         string
	hijack        client.HijackedResponse
	ctrl          *keeper.Control
	stdin         *keeper.StdinWriter
	demux         *demuxer
	activity      atomic.Int64 // unix nanos the output was last seen waiting for the engine, or -1 while a reader is behind
	oomBefore     int64
	stopKill      func() bool
	killed        atomic.Bool
	evicted       atomic.Bool // an exclusive exec of this sandbox is killing it (running.go)
	killedAt      atomic.Int64
	waitOnce      sync.Once
	status        provider.ExitStatus
	err           error
}

func newProcess(p *Provider, sandbox, exec, token string, h client.HijackedResponse, withStdin bool) *process {
	pr := &process{p: p, sandbox: sandbox, exec: exec, token: token, hijack: h, ctrl: keeper.NewControl(h.Conn), stopKill: func() bool { return true }}
	pr.activity.Store(time.Now().UnixNano())
	pr.demux = newDemuxer(h.Reader, &pr.activity)
	if withStdin {
		pr.stdin = keeper.NewStdinWriter(pr.ctrl)
	}
	return pr
}

func (pr *process) Stdout() io.Reader { return &pr.demux.stdout }
func (pr *process) Stderr() io.Reader { return &pr.demux.stderr }

func (pr *process) Stdin() io.WriteCloser {
	if pr.stdin == nil {
		return nil // a nil *keeper.StdinWriter in the interface would not be nil
	}
	return pr.stdin
}

// awaitStatus reads the keeper's status line off the stream; no stdout
// passes before it. Cancelling ctx closes the connection under the read.
func (pr *process) awaitStatus(ctx context.Context) (keeper.Status, error) {
	stop := context.AfterFunc(ctx, func() { pr.hijack.Close() })
	line := pr.demux.statusLine(keeperproto.MaxStatusLine)
	if !stop() {
		return keeper.Status{}, ctx.Err()
	}
	return keeper.ParseStatus(line)
}

// abandon ends an exec that never got going: the keeper sees its control
// stream end and kills whatever it started.
func (pr *process) abandon() {
	pr.demux.close()
	pr.hijack.Close()
}

// kill asks the keeper to kill the whole tree. It never blocks for long: if
// a stdin write holds the connection, the Wait loop's fallback (a second
// exec running "keeper kill") takes over.
func (pr *process) kill() {
	if !pr.killed.CompareAndSwap(false, true) {
		return
	}
	pr.killedAt.Store(time.Now().UnixNano())
	_ = pr.ctrl.Kill(time.Second)
}
