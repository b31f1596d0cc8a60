package docker

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/protocol"
)

// A sandbox in ExecModeChannel has the keeper as its init ("keeper serve
// -stdio"), and this provider holds one channel to it, on the container's
// attach stream. Why the attach stream: it is the container's own stdio,
// so it needs no port, no network and no socket on a volume; it is an
// Engine API call, so it works against a remote engine (DOCKER_HOST tcp://
// or ssh) exactly as against a local one; and nothing inside the sandbox
// can reach it (the keeper's stdin and stdout are pipes of the engine's,
// held by PID 1 only). Its one flaw, that every attacher sees the output
// and stdin is merged, is what the channel's generation fence is for: the
// latest holder wins, and a second resident takes the channel over
// explicitly (channel.Open). The container's log driver is "none", so the
// stream is never written to the engine's logs.

// chanHolder is what this provider holds of one sandbox's channel: at most
// one Conn, many execs multiplexed on it. Opened on first use; a broken
// one is replaced by the next caller (its execs got transient).
type chanHolder struct {
	mu     sync.Mutex // one open at a time
	conn   *channel.Conn
	rw     *attachStream // conn's transport (fault tests break it)
	env    []string      // the container's environment (image ENV, spec.env, PATH)
	dir    string        // the container's working directory
	user   string        // spec.user
	closed bool          // terminated or the provider closed: nothing opens again
	// oomSeen is the sandbox's OOM kill count last seen (chanoom.go); -1
	// unknown.
	oomSeen atomic.Int64
}

// holders are the channels of this provider, by sandbox.
type holders struct {
	mu  sync.Mutex
	set map[string]*chanHolder
}

func (h *holders) get(id string) *chanHolder {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.set == nil {
		h.set = map[string]*chanHolder{}
	}
	ch := h.set[id]
	if ch == nil {
		ch = &chanHolder{}
		h.set[id] = ch
	}
	return ch
}

// drop closes and forgets a sandbox's channel (terminate).
func (h *holders) drop(id string) {
	h.mu.Lock()
	ch := h.set[id]
	delete(h.set, id)
	h.mu.Unlock()
	if ch != nil {
		ch.close()
	}
}

// heldConn is the sandbox's channel if this provider holds a working one;
// nil otherwise (none is opened).
func (h *holders) heldConn(id string) *channel.Conn {
	h.mu.Lock()
	ch := h.set[id]
	h.mu.Unlock()
	if ch == nil {
		return nil
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.closed || ch.conn == nil {
		return nil
	}
	select {
	case <-ch.conn.Done():
		return nil
	default:
		return ch.conn
	}
}

// closeAll closes every channel (Close): the sandboxes go on, their
// detached execs too.
func (h *holders) closeAll() {
	h.mu.Lock()
	set := h.set
	h.set = nil
	h.mu.Unlock()
	for _, ch := range set {
		ch.close()
	}
}

func (ch *chanHolder) close() {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.closed = true
	if ch.conn != nil {
		_ = ch.conn.Close()
		ch.conn = nil
	}
}

// channelFor returns a working channel to a channel-mode sandbox's keeper:
// the one held, or a new one (after a break, or an earlier resident's: a
// takeover). The sandbox must be running.
func (p *Provider) channelFor(ctx context.Context, id string) (*chanHolder, *channel.Conn, error) {
	ch := p.chans.get(id)
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.closed {
		return nil, nil, notFound(id)
	}
	if ch.conn != nil {
		select {
		case <-ch.conn.Done():
			_ = ch.conn.Close()
			ch.conn = nil
		default:
			return ch, ch.conn, nil
		}
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	cfg, known := p.known.config(id)
	if !known {
		c, err := p.inspectSandbox(cctx, id)
		if err != nil {
			return nil, nil, err
		}
		if err := p.checkRunning(id, c); err != nil {
			return nil, nil, err
		}
		cfg, _ = p.known.config(id)
	}
	conn, rw, err := p.openChannel(cctx, id)
	if err != nil {
		// Said by the sandbox's state where it explains the failure (removed
		// behind our back: the engine's attach answers a bare 404).
		if kind := protocol.KindOf(err); kind != protocol.KindConflict && kind != protocol.KindNotFound && cctx.Err() == nil {
			if why := p.notRunning(cctx, id); why != nil {
				return nil, nil, why
			}
		}
		return nil, nil, err
	}
	user, _ := p.known.label(id, LabelUser)
	ch.conn, ch.rw, ch.env, ch.dir, ch.user = conn, rw, cfg.env, cfg.dir, user
	ch.oomSeen.Store(p.oomCount(cctx, conn))
	p.watchEngine()
	return ch, conn, nil
}

// openChannel attaches to the container's stdio and takes the channel
// over. The keeper's stderr (its own complaints) goes to the log. A
// sandbox that stops meanwhile ends the open with why (an attach to a
// stopped container would wait for its next start), and so does one found
// paused when the open is slow.
func (p *Provider) openChannel(ctx context.Context, id string) (conn *channel.Conn, rw *attachStream, err error) {
	err = p.whileRunning(ctx, id, true, func(ctx context.Context) error {
		att, err := p.cli.ContainerAttach(ctx, id, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
		if err != nil {
			return classify(ctx, "container attach", err)
		}
		rw = newAttachStream(att.HijackedResponse, &keeperLog{log: p.log, sandbox: id[:12]})
		conn, err = channel.Open(ctx, rw, channel.Options{Logger: p.log.Named("channel")})
		if err != nil {
			_ = rw.Close()
			if ctx.Err() != nil {
				return classify(ctx, "keeper channel", ctx.Err())
			}
			return &protocol.Error{Kind: protocol.KindTransient, Msg: "sandbox channel", Err: err}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	p.log.Debug("sandbox channel open", zap.String("sandbox", id[:12]), zap.Uint64("generation", conn.Generation()))
	return conn, rw, nil
}

// channelEnv is the environment of an exec over the channel: the
// container's (the keeper adds nothing), then the exec's (later wins), as
// docker exec gives.
func channelEnv(base []string, env map[string]string) []string {
	out := make([]string, 0, len(base)+len(env))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := env[k]; !over {
			out = append(out, kv)
		}
	}
	return append(out, execEnv(env)...)
}
