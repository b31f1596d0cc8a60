//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/protocol"
)

// sandboxInit is what this resident holds of an isolated sandbox's init:
// the keeper as pid 1 of the sandbox's namespaces, and the channel to it.
type sandboxInit struct {
	mu       sync.Mutex    // one start, adoption or connect at a time
	ns       *pidNamespace // the keeper, through a pidfd: killing it ends the sandbox's every process
	rec      initRecord
	bwrap    *exec.Cmd // the init's bwrap when this instance started it, reaped once it ended
	cgroups  []string  // the sandbox's cgroups (its limits), for the OOM count
	logStart int64     // where this start's lines begin in init.log
	conn     *channel.Conn
	removed  bool // the sandbox was terminated: nothing may start again
}

// initOf returns the sandbox's init holder, made on first use. Under p.mu,
// after checking the sandbox still exists and has not expired: remove
// and end take the holder under the same lock, so no init can start for
// a sandbox after they looked.
func (p *Provider) initOf(id string) (*sandboxInit, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := os.Lstat(p.sandboxDir(id)); err != nil {
		return nil, notFound(id)
	}
	if p.ended[id] {
		return nil, protocol.Errorf(protocol.KindConflict, "sandbox %s expired (its lifetime_s ended); terminate it", id)
	}
	si := p.inits[id]
	if si == nil {
		si = &sandboxInit{}
		p.inits[id] = si
	}
	return si, nil
}

// channelFor returns a working channel to the sandbox's keeper: the one
// held, or a new one to the init that runs (this instance's or an earlier
// resident's: a takeover), or to an init started now when none runs (the
// machine restarted, or the sandbox was made by a resident before inits).
func (p *Provider) channelFor(ctx context.Context, id string, m *meta) (*sandboxInit, *channel.Conn, error) {
	si, err := p.initOf(id)
	if err != nil {
		return nil, nil, err
	}
	si.mu.Lock()
	defer si.mu.Unlock()
	if si.removed {
		return nil, nil, notFound(id)
	}
	if si.conn != nil {
		select {
		case <-si.conn.Done():
			_ = si.conn.Close()
			si.conn = nil
		default:
			return si, si.conn, nil
		}
	}
	if si.ns == nil || si.ns.ended() {
		si.releaseLocked()
		p.adoptInit(si, id, m) // an earlier resident's, still running
	}
	if si.ns != nil {
		conn, err := p.openChannel(ctx, id)
		if err == nil {
			si.conn = conn
			return si, conn, nil
		}
		if !si.ns.ended() {
			return nil, nil, &protocol.Error{Kind: protocol.KindTransient, Msg: "sandbox channel", Err: err}
		}
		si.releaseLocked() // it ended meanwhile: start another
	}
	for attempt := 1; ; attempt++ {
		conn, err := p.bringUp(ctx, si, id, m)
		var setupErr *setupError
		if errors.As(err, &setupErr) && attempt < setupAttempts {
			p.log.Info("sandbox init: setup failed, trying again", zap.String("sandbox_id", id), zap.Error(err))
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		si.conn = conn
		return si, conn, nil
	}
}

// bringUp starts a new init and opens its channel. A channel refused by an
// init that ended is a setupError: bwrap or the keeper failed to start.
func (p *Provider) bringUp(ctx context.Context, si *sandboxInit, id string, m *meta) (*channel.Conn, error) {
	if err := p.startInit(si, id, m); err != nil {
		return nil, err
	}
	conn, err := p.openChannel(ctx, id)
	if err != nil {
		if si.ns.awaitEnd(0) {
			msg := readLogFrom(filepath.Join(p.sandboxDir(id), initLog), si.logStart)
			si.releaseLocked()
			return nil, &setupError{msg: msg}
		}
		return nil, &protocol.Error{Kind: protocol.KindTransient, Msg: "sandbox channel", Err: err}
	}
	return conn, nil
}

// startSandbox starts an isolated sandbox's init at create and opens its
// channel, so a sandbox that cannot run is refused at once, not at its
// first exec.
func (p *Provider) startSandbox(ctx context.Context, id string, m *meta) error {
	if !p.isolated() {
		return nil
	}
	_, _, err := p.channelFor(ctx, id, m)
	return initError(err)
}

// openChannel connects to the keeper's socket and takes the channel over.
func (p *Provider) openChannel(ctx context.Context, id string) (*channel.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	rw, err := dialIn(ctx, p.sandboxDir(id), socketFile)
	if err != nil {
		return nil, err
	}
	conn, err := channel.Open(ctx, rw, channel.Options{Logger: p.log.Named("channel")})
	if err != nil {
		_ = rw.Close()
		return nil, err
	}
	return conn, nil
}

// kill ends the sandbox's every process (its init, and with it the pid
// namespace) and waits for that; removed forbids a new start.
func (si *sandboxInit) kill(removed bool) {
	si.mu.Lock()
	defer si.mu.Unlock()
	si.removed = si.removed || removed
	if si.ns != nil {
		si.ns.kill()
		si.ns.awaitEnd(evictTimeout)
	}
	si.releaseLocked()
}

// release lets go of the init (see releaseLocked).
func (si *sandboxInit) release() {
	si.mu.Lock()
	defer si.mu.Unlock()
	si.releaseLocked()
}

// releaseLocked lets go of an init: the channel closed, the pidfd closed
// (the init is not killed), and the bwrap reaped if it has ended.
func (si *sandboxInit) releaseLocked() {
	if si.conn != nil {
		_ = si.conn.Close()
		si.conn = nil
	}
	if si.ns != nil {
		if si.ns.ended() && si.bwrap != nil {
			_ = si.bwrap.Wait() // bwrap exits as soon as its pid 1 did
			si.bwrap = nil
		}
		si.ns.close()
		si.ns = nil
	}
}

// listenIn binds a Unix socket at dir/name and returns it as a file to
// hand over. The address goes through a descriptor of dir, so a long
// state directory never meets the 108-byte limit of a socket path.
func listenIn(dir, name string) (*os.File, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	_ = os.Remove(filepath.Join(dir, name)) // an earlier init's
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: fmt.Sprintf("/proc/self/fd/%d/%s", d.Fd(), name), Net: "unix"})
	if err != nil {
		return nil, err
	}
	l.SetUnlinkOnClose(false) // the path outlives this resident: the next one connects there
	f, err := l.File()
	_ = l.Close()
	return f, err
}

// dialIn connects to the socket at dir/name (see listenIn).
func dialIn(ctx context.Context, dir, name string) (net.Conn, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var dialer net.Dialer
	return dialer.DialContext(ctx, "unix", fmt.Sprintf("/proc/self/fd/%d/%s", d.Fd(), name))
}
