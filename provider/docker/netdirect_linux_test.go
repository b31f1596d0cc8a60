//go:build linux

package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/resident-dev/resident/internal/netns"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// directSandbox makes a running channel-mode sandbox and returns it with
// its keeper's pid, or skips where the direct path is closed (not root).
func directSandbox(t *testing.T) (*Provider, string, int) {
	t.Helper()
	p, _ := newTestProvider(t)
	if ok, why := p.directUsable(); !ok {
		t.Skip("no direct dial here: " + why)
	}
	id, err := p.Create(testCtx(t), protocol.Spec{Image: testImage}, testOwner(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = p.Terminate(testCtx(t), id) })
	pid, err := p.runningPid(testCtx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	return p, id, pid
}

// A pid the engine reported can be reused before pidfd_open: the check
// after the open must refuse every process that is not that container's
// pid 1, and a pidfd whose process ended, whatever lives at its pid now.
func TestVerifyKeeperRefusesAnyOtherProcess(t *testing.T) {
	_, id, pid := directSandbox(t)
	keeper, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(keeper)
	if err := verifyKeeper(keeper, pid, id); err != nil {
		t.Fatalf("the container's own keeper refused: %v", err)
	}

	// The pid reused: the pidfd holds a process that ended (reaped), while
	// the pid it was opened from names the live keeper of the container.
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dead, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dead)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if err := verifyKeeper(dead, pid, id); err == nil {
		t.Fatal("a pidfd of an ended process passed as the keeper at a reused pid")
	}

	// Another container's keeper, our own process, a plain child: none is
	// this container's pid 1.
	other := id[:63] + "x"
	if err := verifyKeeper(keeper, pid, other); err == nil {
		t.Fatal("the keeper passed as another container's")
	}
	self, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(self)
	if err := verifyKeeper(self, os.Getpid(), id); err == nil {
		t.Fatal("the resident's own process passed as the keeper")
	}
}

func TestIsNamespaceInit(t *testing.T) {
	for status, want := range map[string]bool{
		"Name:\tkeeper\nNSpid:\t24312\t1\n": true,
		"NSpid:\t24312\t17\n":               false,
		"NSpid:\t1\n":                       false, // the host's own init
		"Name:\tx\n":                        false,
	} {
		if got := isNamespaceInit([]byte(status)); got != want {
			t.Errorf("isNamespaceInit(%q) = %v, want %v", status, got, want)
		}
	}
}

// A root resident beside its engine dials inside the container: the
// keeper is held while the channel lives, a refused port is the dial's
// own error (not "use the relay"), and terminate lets the pidfd go.
func TestDialDirectHoldsTheKeeperUntilTerminate(t *testing.T) {
	p, id, _ := directSandbox(t)
	_, err := p.DialSandbox(testCtx(t), id, 1)
	if err == nil || errors.Is(err, provider.ErrNoDial) {
		t.Fatalf("DialSandbox of a closed port: %v, want the connection's refusal", err)
	}
	if !errors.Is(err, unix.ECONNREFUSED) {
		t.Fatalf("DialSandbox of a closed port: %v, want ECONNREFUSED from the direct dial", err)
	}
	p.direct.mu.Lock()
	e := p.direct.set[id]
	p.direct.mu.Unlock()
	if e == nil {
		t.Fatal("no keeper held after a direct dial")
	}
	if _, err := p.Terminate(testCtx(t), id); err != nil {
		t.Fatal(err)
	}
	<-e.conn.Done()
	for { // the watcher closes it once the channel is done
		e.mu.Lock()
		closed := e.pidfd < 0
		e.mu.Unlock()
		if closed {
			break
		}
		if testCtx(t).Err() != nil {
			t.Fatal("the keeper's pidfd outlived its sandbox")
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 1e6}, nil)
	}
}

func TestForwardOptionRefusesUnknownValues(t *testing.T) {
	_, err := newProvider(provider.Config{Options: provider.NewOptions(map[string]string{OptForward.Name: "carrier-pigeon"})})
	if protocol.KindOf(err) != protocol.KindInvalidRequest {
		t.Fatalf("forward=carrier-pigeon: %v, want invalid_request", err)
	}
}

// A remote engine, or forward=channel, never takes the direct path: the
// container's pid is not one of this machine's, or the operator said so.
func TestDirectPathOnlyBesideALocalEngine(t *testing.T) {
	for _, c := range []struct {
		host, forward, why string
	}{
		{"tcp://127.0.0.1:2375", ForwardAuto, "not on this machine"},
		{"ssh://user@engine.example", ForwardAuto, "not on this machine"},
		{"unix:///var/run/docker.sock", ForwardChannel, "forward=channel"},
	} {
		p, err := newProvider(provider.Config{Options: provider.NewOptions(map[string]string{OptForward.Name: c.forward})}, client.WithHost(c.host))
		if err != nil {
			if c.host[:3] == "ssh" { // the client wants its ssh helper; nothing to judge
				continue
			}
			t.Fatal(err)
		}
		ok, why := p.directUsable()
		if ok || !strings.Contains(why, c.why) {
			t.Errorf("%s forward=%s: direct=%v (%q), want refused: %s", c.host, c.forward, ok, why, c.why)
		}
		_ = p.Close()
	}
}

// A keeper that cannot be held from here (a resident in another pid
// namespace than the engine's sees another process at its pid) sends the
// sandbox's connections to its channel's streams, and is not looked for
// again on every connection while that channel lives.
func TestKeeperNotHeldFallsBackToStreamsOnce(t *testing.T) {
	p, id, _ := directSandbox(t)
	checks := 0
	saved := checkKeeper
	checkKeeper = func(int, int, string) error { checks++; return errors.New("pid names another process") }
	t.Cleanup(func() { checkKeeper = saved })
	for range 2 {
		_, err := p.DialSandbox(testCtx(t), id, 1)
		if err == nil || errors.Is(err, provider.ErrNoDial) || errors.Is(err, unix.ECONNREFUSED) {
			t.Fatalf("DialSandbox of a closed port: %v, want the stream's refusal", err)
		}
	}
	if checks != 1 {
		t.Fatalf("the keeper was checked %d times for one channel, want once", checks)
	}
}

// setns refused (no privilege over the namespace: a rootless engine's
// user namespace) sends connections to the streams, and the provider
// stops trying the direct path for every sandbox.
func TestSetnsRefusedTurnsTheDirectPathOff(t *testing.T) {
	p, id, _ := directSandbox(t)
	dials := 0
	saved := dialNS
	dialNS = func(context.Context, int, string, string) (net.Conn, error) {
		dials++
		return nil, fmt.Errorf("%w (setns: %v)", netns.ErrCannotEnter, unix.EPERM)
	}
	t.Cleanup(func() { dialNS = saved })
	for range 2 {
		_, err := p.DialSandbox(testCtx(t), id, 1)
		if err == nil || errors.Is(err, provider.ErrNoDial) || errors.Is(err, unix.ECONNREFUSED) || errors.Is(err, netns.ErrCannotEnter) {
			t.Fatalf("DialSandbox of a closed port: %v, want the stream's refusal", err)
		}
	}
	if dials != 1 {
		t.Fatalf("setns tried %d times after it was refused, want once", dials)
	}
}
