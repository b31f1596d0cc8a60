package resident

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// egressListen is where the proxy listens inside the sandbox.
const egressListen = "127.0.0.1:3128"

// egressStartTimeout bounds the wait for a new sandbox's proxy to listen.
const egressStartTimeout = 30 * time.Second

// egressDialTimeout bounds the resident's dial of an allowed target.
const egressDialTimeout = 10 * time.Second

// proxyEnvNames are the variables that announce the proxy to the
// sandbox's programs, both spellings, as curl, pip and Go read them.
var proxyEnvNames = []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}

// prepareEgress checks spec.egress and turns the spec into what the
// provider creates: network "none", the proxy announced in the env, and
// no egress key (the provider never sees it).
func (s *session) prepareEgress(spec *protocol.Spec) (egressPolicy, error) {
	if spec.Egress == nil {
		return nil, nil
	}
	if s.relayer == nil || !s.prov.Info().Capabilities.Egress {
		return nil, invalid("spec.egress: provider %s cannot carry egress (capabilities.egress is false)", s.prov.Info().Name)
	}
	if spec.Network != "" && spec.Network != "none" {
		return nil, invalid("spec.egress needs spec.network \"none\" (or unset), not %q: the proxy is the only way out", spec.Network)
	}
	policy, err := parseEgress(spec.Egress)
	if err != nil {
		return nil, err
	}
	env := maps.Clone(spec.Env)
	if env == nil {
		env = map[string]string{}
	}
	for _, name := range append(proxyEnvNames, "NO_PROXY", "no_proxy") {
		if _, set := env[name]; set {
			return nil, invalid("spec.env %s is set by spec.egress; leave it out", name)
		}
	}
	for _, name := range proxyEnvNames {
		env[name] = "http://" + egressListen
	}
	env["NO_PROXY"], env["no_proxy"] = "localhost,127.0.0.1,::1", "localhost,127.0.0.1,::1"
	spec.Env, spec.Network, spec.Egress = env, "none", nil
	return policy, nil
}

// egressProxy is the resident's side of one sandbox's proxy exec.
type egressProxy struct {
	s       *session
	net     *sandboxNet
	policy  egressPolicy
	log     *zap.Logger
	mu      sync.Mutex // orders verdict lines
	verdict io.Writer
}

// startEgress starts the proxy in a sandbox just created and returns once
// it listens, so the first exec of the sandbox can use it.
func (s *session) startEgress(ctx context.Context, sandboxID string, policy egressPolicy) error {
	sn := s.netFor(sandboxID)
	proc, err := s.startCarry(sn.ctx, sandboxID, s.relayer.ProxyCommand(egressListen))
	if err != nil {
		return fmt.Errorf("egress proxy: %w", err)
	}
	p := &egressProxy{s: s, net: sn, policy: policy, verdict: proc.Stdin(),
		log: s.log.With(zap.String("sandbox_id", sandboxID), zap.String("component", "egress"))}
	s.spawn(func() { s.logStderr(proc.Stderr(), p.log) })
	events := json.NewDecoder(bufio.NewReader(proc.Stdout()))
	ready := make(chan error, 1)
	s.spawn(func() {
		var first provider.ProxyEvent
		if err := events.Decode(&first); err != nil || !first.Ready {
			ready <- fmt.Errorf("the proxy did not start: %s (%v)", first.Error, err)
			return
		}
		ready <- nil
	})
	timer := time.NewTimer(egressStartTimeout)
	defer timer.Stop()
	select {
	case err = <-ready:
	case <-timer.C:
		err = fmt.Errorf("the proxy did not say it listens within %s", egressStartTimeout)
	case <-ctx.Done():
	}
	if err != nil || ctx.Err() != nil {
		sn.cancel()
		_, _ = proc.Wait()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return protocol.Errorf(protocol.KindInternal, "egress proxy: %s", s.scrub.ScrubString(err.Error()))
	}
	s.spawn(func() { p.serve(events, proc) })
	return nil
}

// serve answers the proxy's requests until it ends (with the sandbox or
// the session).
func (p *egressProxy) serve(events *json.Decoder, proc provider.Process) {
	for {
		var ev provider.ProxyEvent
		if err := events.Decode(&ev); err != nil {
			break
		}
		if !p.s.takeCarried() {
			p.refuse(ev.ID, "the resident carries as many connections as it may")
			continue
		}
		p.s.spawn(func() {
			defer p.s.releaseCarried()
			p.open(ev)
		})
	}
	_ = proc.Stdin().Close()
	if _, err := proc.Wait(); err != nil || p.net.ctx.Err() == nil {
		p.log.Warn("egress proxy ended; the sandbox has no way out now", zap.Error(err))
	}
}

// open decides one connection, dials it, and carries it over an attach.
func (p *egressProxy) open(ev provider.ProxyEvent) {
	target := net.JoinHostPort(ev.Host, portString(ev.Port))
	log := p.log.With(zap.String("target", p.s.scrub.ScrubString(target)))
	ctx, cancel := context.WithCancel(p.net.ctx)
	defer cancel()
	conn, err := p.dial(ctx, ev.Host, ev.Port)
	if err != nil {
		msg := p.s.scrub.ScrubString(err.Error())
		log.Info("egress refused", zap.String("reason", msg))
		p.refuse(ev.ID, msg)
		return
	}
	if a, ok := p.s.prov.(provider.ProxyAttacher); ok {
		held, err := a.AttachProxy(ctx, p.net.id, ev.ID)
		switch {
		case err == nil:
			log.Info("egress allowed")
			carryBoth(ctx, conn, held)
			return
		case !errors.Is(err, provider.ErrNoDial):
			p.notCarried(conn, ev, log, err)
			return
		}
	}
	proc, err := p.s.startCarry(ctx, p.net.id, p.s.relayer.AttachCommand(ev.ID))
	if err != nil {
		p.notCarried(conn, ev, log, err)
		return
	}
	log.Info("egress allowed")
	p.s.carry(conn, proc, log)
}

// notCarried ends an allowed connection the resident could not join to
// the sandbox's client: the upstream is closed, and the client is answered
// at once (a refusal naming why) instead of waiting out the proxy's wait.
// A client the proxy no longer holds ignores the verdict.
func (p *egressProxy) notCarried(conn *net.TCPConn, ev provider.ProxyEvent, log *zap.Logger, err error) {
	_ = conn.Close()
	msg := p.s.scrub.ScrubString(err.Error())
	log.Info("egress not carried", zap.String("error", msg))
	p.refuse(ev.ID, fmt.Sprintf("%s:%d is allowed, but the resident could not carry the connection: %s", ev.Host, ev.Port, msg))
}

func (p *egressProxy) refuse(id, msg string) {
	line, _ := json.Marshal(provider.ProxyVerdict{ID: id, Refusal: msg})
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = p.verdict.Write(append(line, '\n'))
}

// dial connects to host:port if the policy allows it (egressTargets), to
// the first address that answers.
func (p *egressProxy) dial(ctx context.Context, host string, port int) (*net.TCPConn, error) {
	addrs, err := egressTargets(ctx, p.policy, net.DefaultResolver, host, port)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: egressDialTimeout}
	var errs []error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", a.String())
		if err == nil {
			return c.(*net.TCPConn), nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("%s:%d is allowed, but no address of it answered: %w", host, port, errors.Join(errs...))
}
