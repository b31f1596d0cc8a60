package resident

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"

	"github.com/resident-dev/resident/provider"
)

// maxCarriedConns bounds the connections a session carries at once, over
// every forward and egress proxy together: each holds an exec and two
// goroutines. Past it a new connection is closed at once.
const maxCarriedConns = 512

// sandboxNet is what a session carries for one sandbox: its forwards and
// its egress proxy. Its context ends them all, with the sandbox
// (terminate, or an exec that finds it gone) or the session.
type sandboxNet struct {
	id       string
	ctx      context.Context
	cancel   context.CancelFunc
	forwards map[string]*forward // guarded by session.netMu
}

// netState is the session's part of issue 20's carrying.
type netState struct {
	relayer provider.Relayer // nil: the provider cannot carry connections
	netMu   sync.Mutex
	nets    map[string]*sandboxNet // sandbox id -> its carrying
	fwds    map[string]*forward    // forward id -> forward
	carried chan struct{}          // one token per carried connection
}

func (s *session) initNet() {
	s.nets = map[string]*sandboxNet{}
	s.fwds = map[string]*forward{}
	s.carried = make(chan struct{}, maxCarriedConns)
	caps := s.prov.Info().Capabilities
	if r, ok := s.prov.(provider.Relayer); ok && (caps.PortForward || caps.Egress) {
		s.relayer = r
	}
}

// netFor returns the sandbox's carrying, making it on first use.
func (s *session) netFor(id string) *sandboxNet {
	s.netMu.Lock()
	defer s.netMu.Unlock()
	if n := s.nets[id]; n != nil {
		return n
	}
	ctx, cancel := context.WithCancel(s.base)
	n := &sandboxNet{id: id, ctx: ctx, cancel: cancel, forwards: map[string]*forward{}}
	s.nets[id] = n
	return n
}

// endNet ends everything the session carries for a sandbox.
func (s *session) endNet(id string) {
	s.netMu.Lock()
	n := s.nets[id]
	delete(s.nets, id)
	if n != nil {
		for fid := range n.forwards {
			delete(s.fwds, fid)
		}
	}
	s.netMu.Unlock()
	if n != nil {
		n.cancel()
	}
}

// takeCarried claims a connection slot; false when all are taken.
func (s *session) takeCarried() bool {
	select {
	case s.carried <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s *session) releaseCarried() { <-s.carried }

// spawn runs fn as session work: Serve waits for it (within the grace
// period) after cancelling s.base. Only a running handler or spawned
// function calls it, so the wait group never restarts from zero.
func (s *session) spawn(fn func()) {
	s.handlers.Add(1)
	go func() {
		defer s.handlers.Done()
		fn()
	}()
}

func newNetID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func portString(port int) string { return strconv.Itoa(port) }
