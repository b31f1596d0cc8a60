package resident

import (
	"context"
	"errors"
	"io"
	"net"
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// forward is one sandbox/forward_port: a loopback listener whose every
// connection is one relay exec in the sandbox.
type forward struct {
	id     string
	port   int
	net    *sandboxNet
	ln     *net.TCPListener
	cancel context.CancelFunc
}

// forwardPort opens a forward. It is ordered by sandbox, as terminate is,
// so a forward asked for behind a terminate finds the sandbox gone instead
// of outliving it.
func forwardPort(ctx context.Context, s *session, _ *call, p *protocol.ForwardPortParams) (*protocol.ForwardPortResult, error) {
	if s.relayer == nil || !s.prov.Info().Capabilities.PortForward {
		return nil, invalid("provider %s cannot forward ports (capabilities.port_forward is false)", s.prov.Info().Name)
	}
	if err := checkID("sandbox_id", p.SandboxID); err != nil {
		return nil, err
	}
	if p.Port < 1 || p.Port > 65535 {
		return nil, invalid("port must be 1..65535, not %d", p.Port)
	}
	if err := s.checkOwned(ctx, p.SandboxID); err != nil {
		return nil, err
	}
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, protocol.Errorf(protocol.KindTransient, "listen on loopback: %v", err)
	}
	sn := s.netFor(p.SandboxID)
	fctx, cancel := context.WithCancel(sn.ctx)
	f := &forward{id: newNetID("fwd-"), port: p.Port, net: sn, ln: ln, cancel: cancel}
	context.AfterFunc(fctx, func() { _ = ln.Close() })
	s.netMu.Lock()
	if sn.ctx.Err() == nil {
		sn.forwards[f.id] = f
		s.fwds[f.id] = f
	}
	s.netMu.Unlock()
	s.spawn(func() { s.acceptForward(fctx, f) })
	s.forwardLog(f).Info("port forwarded", zap.String("address", ln.Addr().String()))
	return &protocol.ForwardPortResult{Address: ln.Addr().String(), ForwardID: f.id}, nil
}

func (s *session) forwardLog(f *forward) *zap.Logger {
	return s.log.With(zap.String("forward_id", f.id), zap.String("sandbox_id", f.net.id), zap.Int("port", f.port))
}

func (s *session) acceptForward(ctx context.Context, f *forward) {
	defer s.closeForward(f.id)
	log := s.forwardLog(f)
	for {
		conn, err := f.ln.AcceptTCP()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				log.Warn("forward stopped accepting", zap.Error(err))
			}
			return
		}
		if !s.takeCarried() {
			log.Warn("connection refused: the session carries as many as it may", zap.Int("max", maxCarriedConns))
			_ = conn.Close()
			continue
		}
		s.spawn(func() {
			defer s.releaseCarried()
			s.relayConnection(ctx, f, conn, log)
		})
	}
}

// relayConnection carries one accepted connection. An exec the provider
// refuses because the sandbox is gone (not_found) or not running
// (conflict) ends the whole forward: it ends with its sandbox.
func (s *session) relayConnection(ctx context.Context, f *forward, conn *net.TCPConn, log *zap.Logger) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if d, ok := s.prov.(provider.Dialer); ok {
		up, err := d.DialSandbox(cctx, f.net.id, f.port)
		switch {
		case err == nil:
			carryConns(cctx, conn, up)
			return
		case !errors.Is(err, provider.ErrNoDial):
			closeUncarried(conn)
			log.Info("forwarded connection not carried", zap.String("error", s.scrub.ScrubString(err.Error())))
			if k := protocol.KindOf(err); k == protocol.KindNotFound || k == protocol.KindConflict {
				f.cancel()
			}
			return
		}
	}
	proc, err := s.startCarry(cctx, f.net.id, s.relayer.RelayCommand(f.port))
	if err != nil {
		_ = conn.Close()
		log.Info("forwarded connection not carried", zap.String("error", s.scrub.ScrubString(err.Error())))
		if k := protocol.KindOf(err); k == protocol.KindNotFound || k == protocol.KindConflict {
			f.cancel()
		}
		return
	}
	s.carry(conn, proc, log.With(zap.String("peer", conn.RemoteAddr().String())))
}

// closeUncarried ends a connection the sandbox side refused as the relay's
// exit does: a clean end (a half-close, then what the client sent read
// and dropped, for a bounded while), not the reset a close with unread
// bytes would send.
func closeUncarried(conn *net.TCPConn) {
	_ = conn.CloseWrite()
	_ = conn.SetReadDeadline(time.Now().Add(uncarriedDrain))
	_, _ = io.Copy(io.Discard, conn)
	_ = conn.Close()
}

// uncarriedDrain bounds closeUncarried's wait for the client's end.
const uncarriedDrain = 2 * time.Second

// closeForward drops a forward and stops it; false when it was not open.
func (s *session) closeForward(id string) bool {
	s.netMu.Lock()
	f := s.fwds[id]
	delete(s.fwds, id)
	if f != nil {
		delete(f.net.forwards, id)
	}
	s.netMu.Unlock()
	if f == nil {
		return false
	}
	f.cancel()
	return true
}

func closePort(_ context.Context, s *session, _ *call, p *protocol.PortCloseParams) (*protocol.PortCloseResult, error) {
	if err := checkID("forward_id", p.ForwardID); err != nil {
		return nil, err
	}
	return &protocol.PortCloseResult{Existed: s.closeForward(p.ForwardID)}, nil
}
