package external

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/wire"
)

// Back-off between restarts of a provider that keeps dying.
const (
	firstBackoff = 100 * time.Millisecond
	maxBackoff   = 10 * time.Second
)

// current returns a live child, starting one (after the back-off of the
// last crash) when there is none. A new child gets initialize and the
// credentials again.
func (p *Provider) current(ctx context.Context) (*child, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, protocol.Errorf(protocol.KindCancelled, "provider %s: closed", p.name)
	}
	if p.child != nil {
		select {
		case <-p.child.gone:
		default:
			return p.child, nil
		}
	}
	if wait := time.Until(p.nextStart); wait > 0 {
		t := time.NewTimer(wait)
		p.mu.Unlock()
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			p.mu.Lock()
			return nil, ctx.Err()
		}
		p.mu.Lock()
		if p.child != nil && !isGone(p.child) {
			return p.child, nil
		}
	}
	c, err := p.spawn(ctx)
	if err != nil {
		p.noteCrash()
		return nil, err
	}
	p.child = c
	return c, nil
}

func isGone(c *child) bool {
	select {
	case <-c.gone:
		return true
	default:
		return false
	}
}

func (p *Provider) noteCrash() {
	p.restarts++
	backoff := firstBackoff << min(p.restarts-1, 7)
	p.nextStart = time.Now().Add(min(backoff, maxBackoff))
}

// spawn starts a child and runs the handshake (and auth, after the first).
func (p *Provider) spawn(ctx context.Context) (*child, error) {
	c, err := start(p.argv, p.logger, p.maxFrame, p.notification, p.connData)
	if err != nil {
		return nil, err
	}
	go p.watch(c)
	var res wire.InitializeResult
	if err := p.callOn(ctx, c, wire.MethodInitialize, p.initParams(), &res); err != nil {
		c.kill()
		return nil, err
	}
	if res.ProtocolVersion != wire.Version {
		c.kill()
		return nil, protocol.Errorf(protocol.KindInvalidRequest, "provider %s speaks protocol %d, not %d", p.name, res.ProtocolVersion, wire.Version)
	}
	// The first handshake describes the provider for the whole session (the
	// host was told its name, capabilities and secrets); a restarted child
	// is not allowed to change them, and Info reads this without a lock.
	if p.described == nil {
		p.described = &res
		p.relay = p.askNetCommands(ctx, c, res.Capabilities)
	} else if res.Name != p.described.Name || res.Capabilities != p.described.Capabilities || res.FixedOwners != p.described.FixedOwners {
		p.logger().Warn("a restarted provider describes itself differently; the first description stays",
			stringField("name", res.Name))
	}
	if p.creds != nil {
		if err := p.callOn(ctx, c, wire.MethodAuthApply, wire.AuthApplyParams{Credentials: p.creds}, nil); err != nil {
			c.kill()
			return nil, fmt.Errorf("provider %s auth/apply: %w", p.name, err)
		}
	}
	return c, nil
}

// watch ends what a dead child leaves: its execs fail transient.
func (p *Provider) watch(c *child) {
	defer close(c.watched)
	<-c.gone
	p.mu.Lock()
	if p.closed {
		p.logger().Info("provider process ended", errorField(c.cause))
	} else {
		p.logger().Warn("provider process ended", errorField(c.cause))
	}
	if p.child == c {
		p.noteCrash()
	}
	execs := p.execs
	p.execs = map[string]*process{}
	var conns []*wire.ConnEnd
	for _, cs := range p.conns {
		if cs.child == c {
			conns = append(conns, cs.end)
		}
	}
	p.mu.Unlock()
	for _, end := range conns {
		end.Reset(protocol.Errorf(protocol.KindTransient, "provider %s ended during the connection: %v", p.name, c.cause))
	}
	for _, e := range execs {
		if e.child == c {
			e.fail(protocol.Errorf(protocol.KindTransient, "provider %s ended during the exec: %v", p.name, c.cause))
		} else {
			p.mu.Lock()
			p.execs[e.id] = e
			p.mu.Unlock()
		}
	}
}

// call runs one request on the live child under the provider deadline.
func (p *Provider) call(ctx context.Context, method string, params, result any) error {
	c, err := p.current(ctx)
	if err != nil {
		return err
	}
	return p.callOn(ctx, c, method, params, result)
}

// callOn enforces the deadline: when the host gives up, the provider is
// told ($/cancelRequest) and not waited for; when the provider itself
// misses its deadline it is killed, so the calls in flight fail transient
// and the next call meets a fresh one.
func (p *Provider) callOn(ctx context.Context, c *child, method string, params, result any) error {
	callCtx, cancel := context.WithTimeout(ctx, p.callTimeout)
	defer cancel()
	var id jsonrpc2.ID
	var raw json.RawMessage
	call, err := c.conn.DispatchCall(callCtx, method, params, jsonrpc2.PickID(p.nextID(&id)))
	if err != nil {
		return p.lost(c, method, err)
	}
	done := make(chan error, 1)
	go func() { done <- call.Wait(callCtx, &raw) }()
	select {
	case err = <-done:
	case <-c.gone:
		return p.lost(c, method, errors.New("gone"))
	}
	switch {
	case err == nil:
		if result != nil && len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, result); err != nil {
				return protocol.Errorf(protocol.KindTransient, "provider %s %s: bad result: %v", p.name, method, err)
			}
		}
		return nil
	case ctx.Err() != nil:
		_ = c.conn.Notify(context.Background(), wire.MethodCancel, wire.CancelParams{ID: id})
		return ctx.Err()
	case callCtx.Err() != nil:
		p.logger().Error("provider missed its deadline; restarting it", stringField("method", method), durationField("deadline", p.callTimeout))
		c.kill()
		<-c.gone // the next call must meet a new child, not this one
		return protocol.Errorf(protocol.KindTransient, "provider %s did not answer %s within %s; it was restarted", p.name, method, p.callTimeout)
	}
	var rpcErr *jsonrpc2.Error
	if !errors.As(err, &rpcErr) {
		return p.lost(c, method, err) // the connection ended: say why
	}
	return asWireError(p.name, method, err)
}

// asWireError keeps an error answer's kind; a lost connection is transient.
func asWireError(name, method string, err error) error {
	var rpcErr *jsonrpc2.Error
	if errors.As(err, &rpcErr) {
		return wireError(name, method, rpcErr.Message, rpcErr.Code, rpcErr.Data)
	}
	return protocol.Errorf(protocol.KindTransient, "provider %s %s: %v", name, method, err)
}

func (p *Provider) lost(c *child, method string, err error) error {
	<-c.gone
	return protocol.Errorf(protocol.KindTransient, "provider %s %s: %v", p.name, method, c.cause)
}

// nextID numbers every request to the child: each call must pick its id
// here, never take jsonrpc2's own numbering, which counts separately and
// would reuse these numbers (two calls under one id get each other's
// answers, and the provider's cancellation map mixes them up too). It
// takes no lock: spawn calls it while holding p.mu.
func (p *Provider) nextID(id *jsonrpc2.ID) jsonrpc2.ID {
	*id = jsonrpc2.ID{Num: p.seq.Add(1)}
	return *id
}

// wireError keeps the provider's kind; an unknown or missing one is
// transient, as the contract says.
func wireError(name, method, msg string, code int64, data *json.RawMessage) error {
	var d wire.ErrorData
	if data == nil || json.Unmarshal(*data, &d) != nil {
		d = wire.ErrorData{}
	}
	_ = code
	if d.UseRelay && method == wire.MethodConnOpen {
		return fmt.Errorf("provider %s: %s: %w", name, msg, provider.ErrNoDial)
	}
	return d.Error(msg)
}

func fromWireError(e *wire.Error) error {
	if e == nil {
		return nil
	}
	return e.Data.Error(e.Message)
}
