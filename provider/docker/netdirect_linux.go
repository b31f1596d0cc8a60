//go:build linux

package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/internal/netns"
)

// nsEntry is one sandbox's keeper (the container's pid 1) held through a
// pidfd: setns through it always enters that container's network
// namespace, never that of a process that reused the pid later. It lives
// as long as the channel it was found with (conn): a channel lost or
// closed (terminate, Close) closes it, and the next dial finds the keeper
// again.
type nsEntry struct {
	conn  *channel.Conn
	mu    sync.Mutex // orders dup against close
	pidfd int        // -1 once closed
	// failed: the keeper could not be held (findKeeper's error); pidfd
	// is -1 and this channel's connections take its streams.
	failed error
}

func (e *nsEntry) dup() (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pidfd < 0 {
		return -1, fmt.Errorf("%w: the keeper's pidfd is closed", errNoDirect)
	}
	return netns.Dup(e.pidfd)
}

func (e *nsEntry) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pidfd >= 0 {
		_ = unix.Close(e.pidfd)
		e.pidfd = -1
	}
}

// directUsable decides once whether this provider may dial inside its
// containers' namespaces at all.
func (p *Provider) directUsable() (bool, string) {
	d := &p.direct
	d.once.Do(func() {
		host := p.cli.DaemonHost()
		switch {
		case d.mode == ForwardChannel:
			d.why = "forward=channel"
		case !strings.HasPrefix(host, "unix://"):
			d.why = "the engine is not on this machine (" + host + ")"
		case unix.Geteuid() != 0:
			d.why = "the resident is not root"
		default:
			d.usable = true
		}
	})
	return d.usable, d.why
}

// dialDirect dials address inside the container's network namespace, a
// locked thread of the resident entering it through the keeper's pidfd
// (netns.Dial). errNoDirect (with why) when that path is not open here;
// any other error is the dial's own.
func (p *Provider) dialDirect(ctx context.Context, id string, conn *channel.Conn, network, address string) (net.Conn, string, error) {
	if ok, why := p.directUsable(); !ok {
		return nil, why, errNoDirect
	}
	e, err := p.keeperNS(ctx, id, conn)
	if err != nil {
		return nil, err.Error(), errNoDirect
	}
	fd, err := e.dup()
	if err != nil {
		return nil, err.Error(), errNoDirect
	}
	defer unix.Close(fd)
	c, err := dialNS(ctx, fd, network, address)
	if errors.Is(err, netns.ErrCannotEnter) {
		// Not root over this namespace after all (a rootless engine, a
		// user namespace): no sandbox will do better.
		p.direct.mu.Lock()
		p.direct.off = true
		p.direct.mu.Unlock()
		return nil, err.Error(), errNoDirect
	}
	return c, "", err
}

// dialNS is netns.Dial; a test makes setns refuse, as a user namespace
// the resident has no privilege over would.
var dialNS = netns.Dial

// keeperNS is the sandbox's keeper, held: cached while conn lives, else
// found (findKeeper).
func (p *Provider) keeperNS(ctx context.Context, id string, conn *channel.Conn) (*nsEntry, error) {
	d := &p.direct
	d.mu.Lock()
	if d.off {
		d.mu.Unlock()
		return nil, errors.New("setns was refused before")
	}
	if e := d.set[id]; e != nil && e.conn == conn {
		d.mu.Unlock()
		if e.failed != nil {
			return nil, e.failed
		}
		return e, nil
	}
	d.mu.Unlock()
	fd, err := p.findKeeper(ctx, id)
	if err != nil && !errors.Is(err, errNotKeeper) {
		return nil, err // the engine's answer; the next dial asks again
	}
	// A keeper not held (its pid not visible from here, or not this
	// container's pid 1) is remembered with the channel too: the sandbox's
	// next connections go straight to its streams, not through two more
	// inspects each.
	e := &nsEntry{conn: conn, pidfd: fd, failed: err}
	d.mu.Lock()
	if d.set == nil {
		d.set = map[string]*nsEntry{}
	}
	if old := d.set[id]; old != nil {
		if old.conn == conn {
			d.mu.Unlock()
			e.close()
			if old.failed != nil {
				return nil, old.failed
			}
			return old, nil
		}
		old.close()
	}
	d.set[id] = e
	d.mu.Unlock()
	select {
	case <-conn.Done():
		p.forgetKeeperNS(id, e)
	default:
		go func() {
			<-conn.Done()
			p.forgetKeeperNS(id, e)
		}()
	}
	if e.failed != nil {
		return nil, e.failed
	}
	return e, nil
}

func (p *Provider) forgetKeeperNS(id string, e *nsEntry) {
	d := &p.direct
	d.mu.Lock()
	if d.set[id] == e {
		delete(d.set, id)
	}
	d.mu.Unlock()
	e.close()
}

// errNotKeeper: the process at the container's pid, seen from here, is
// not (or no longer) the container's keeper.
var errNotKeeper = errors.New("the container's keeper cannot be held from here")

// findKeeper opens a pidfd of the running container's pid 1, the keeper.
// The pid the engine reports could be reused between its inspect and the
// pidfd_open: so, after the open, the held process must be the keeper of
// this very container (verifyKeeper) and the engine must still report it
// running with that pid.
func (p *Provider) findKeeper(ctx context.Context, id string) (int, error) {
	pid, err := p.runningPid(ctx, id)
	if err != nil {
		return -1, err
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1, fmt.Errorf("%w: pidfd_open %d: %v", errNotKeeper, pid, err)
	}
	if err := checkKeeper(fd, pid, id); err != nil {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("%w: %v", errNotKeeper, err)
	}
	again, err := p.runningPid(ctx, id)
	if err == nil && again != pid {
		err = fmt.Errorf("the container's pid changed from %d to %d", pid, again)
	}
	if err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func (p *Provider) runningPid(ctx context.Context, id string) (int, error) {
	c, err := p.inspectSandbox(ctx, id)
	if err != nil {
		return 0, err
	}
	if c.State == nil || !c.State.Running || c.State.Paused || c.State.Pid <= 0 {
		return 0, errors.New("the container is not running")
	}
	return c.State.Pid, nil
}

// checkKeeper is verifyKeeper; a test makes it refuse, as it would for a
// resident in another pid namespace than the engine's.
var checkKeeper = verifyKeeper

// verifyKeeper checks that the process pidfd holds (opened from pid) is
// pid 1 of container id: its cgroup names the container, its innermost pid
// is 1, and it is still alive after both were read from /proc/PID, so
// /proc/PID was that process and not one that reused the pid. A resident
// in another pid namespace than the engine's sees another process (or
// none) at the engine's pid, and is refused here too.
func verifyKeeper(pidfd, pid int, id string) error {
	proc := fmt.Sprintf("/proc/%d/", pid)
	cg, err := os.ReadFile(proc + "cgroup")
	if err != nil {
		return fmt.Errorf("pid %d: %w", pid, err)
	}
	if len(id) != 64 || !bytes.Contains(cg, []byte(id)) {
		return fmt.Errorf("pid %d is not in container %.12s's cgroup", pid, id)
	}
	status, err := os.ReadFile(proc + "status")
	if err != nil {
		return fmt.Errorf("pid %d: %w", pid, err)
	}
	if !isNamespaceInit(status) {
		return fmt.Errorf("pid %d is not pid 1 of its container", pid)
	}
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
		return fmt.Errorf("pid %d ended while it was checked: %w", pid, err)
	}
	return nil
}

// isNamespaceInit says a /proc/PID/status is of a process that is pid 1 of
// its innermost pid namespace (NSpid's last field), and not of the
// resident's own.
func isNamespaceInit(status []byte) bool {
	for line := range strings.SplitSeq(string(status), "\n") {
		rest, ok := strings.CutPrefix(line, "NSpid:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		return len(f) >= 2 && f[len(f)-1] == "1"
	}
	return false
}
