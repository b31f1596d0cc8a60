package external

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/wire"
)

// Name is this provider's name in the registry.
const Name = "external"

// Defaults the resident announces to the provider in initialize.
const (
	DefaultCallTimeout = 60 * time.Second
	DefaultExecWindow  = 1 << 20
	maxFrameBytes      = 16 << 20
	stopGrace          = 2 * time.Second
)

// CallTimeoutOption bounds one call to the provider program
// (--provider-opt call_timeout=2m); the resident announces it to the program
// in initialize.
var CallTimeoutOption = provider.Option[time.Duration]{
	Name:    "call_timeout",
	Default: DefaultCallTimeout,
	Doc:     "the deadline of one call to the provider program; 0 keeps the default",
}

func init() {
	provider.Register(Name, "any program speaking docs/provider-protocol.md: resident --provider external -- CMD [ARGS...]", New, CallTimeoutOption)
}

// Provider drives one external provider program.
type Provider struct {
	argv        []string
	name        string
	logp        atomic.Pointer[zap.Logger] // provider.<name> once the handshake names it
	base        *zap.Logger
	notify      func(string, any)
	callTimeout time.Duration
	window      int64
	maxFrame    int

	mu        sync.Mutex
	child     *child
	described *wire.InitializeResult
	relay     *wire.NetCommands // nil: no port_forward or egress through this provider
	policy    provider.SecretPolicy
	creds     map[string]string
	owners    knownOwners // with fixed_owners (owners.go)
	execs     map[string]*process
	reads     map[string]*readStream
	conns     map[string]carried
	connSeq   uint64
	connWin   int64
	unauth    func(string)
	seq       atomic.Uint64
	execSeq   uint64
	restarts  int
	nextStart time.Time
	closed    bool
}

var (
	_ provider.Provider          = (*Provider)(nil)
	_ provider.Store             = (*Provider)(nil)
	_ provider.FileWriter        = (*Provider)(nil)
	_ provider.FixedOwnerKey     = (*Provider)(nil)
	_ provider.CredentialSecrets = (*Provider)(nil)
	_ provider.OwnerMemory       = (*Provider)(nil)
)

// New starts the program in cfg.Args and runs the handshake: the resident
// must know the provider's name, capabilities and secrets before serving a
// host, so this factory is the one that starts its backend at once.
func New(cfg provider.Config) (provider.Provider, error) {
	if len(cfg.Args) == 0 {
		return nil, protocol.Errorf(protocol.KindInvalidRequest, "the external provider needs its command: resident --provider external -- CMD [ARGS...]")
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	notify := cfg.Notify
	if notify == nil {
		notify = func(string, any) {}
	}
	p := &Provider{
		argv: append([]string{}, cfg.Args...), name: cfg.Args[0], base: log,
		notify: notify, callTimeout: DefaultCallTimeout, window: DefaultExecWindow, maxFrame: maxFrameBytes,
		execs: map[string]*process{}, reads: map[string]*readStream{},
		conns: map[string]carried{}, connWin: wire.DefaultConnWindow,
	}
	if d := CallTimeoutOption.From(cfg.Options); d > 0 {
		p.callTimeout = d
	}
	p.logp.Store(log.Named("provider.external"))
	ctx, cancel := context.WithTimeout(context.Background(), p.callTimeout)
	defer cancel()
	if _, err := p.current(ctx); err != nil {
		return nil, err
	}
	if k := p.described.OwnerKey; k != "" && !provider.OwnerShaped(k) {
		p.Close()
		return nil, protocol.Errorf(protocol.KindInvalidRequest, "provider %s: owner_key %q must end in -install-id", p.described.Name, k)
	}
	p.name = p.described.Name
	p.logp.Store(log.Named("provider." + p.name))
	policy, err := policyOf(p.described.Secrets)
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("provider %s: %w", p.name, err)
	}
	p.policy = policy
	return p, nil
}

// logger is the provider's named logger; the provider's own stderr lines
// go there too, through the resident's scrubbing core.
func (p *Provider) logger() *zap.Logger { return p.logp.Load() }

func (p *Provider) initParams() wire.InitializeParams {
	return wire.InitializeParams{ProtocolVersion: wire.Version, ResidentVersion: "resident", MaxFrameBytes: p.maxFrame,
		ExecWindowBytes: p.window, CallTimeoutS: p.callTimeout.Seconds(), ConnWindowBytes: p.connWin}
}

// Info is what the provider described; port_forward and egress only when
// it also answered net/commands with usable templates (askNetCommands).
func (p *Provider) Info() provider.Info {
	d := p.described
	caps := d.Capabilities
	if p.relay == nil {
		caps.PortForward, caps.Egress = false, false
	}
	return provider.Info{Name: d.Name, Version: d.Version, Capabilities: caps, CallTimeout: p.callTimeout, DetachedBufferBytes: d.DetachedBufferBytes}
}

func (p *Provider) Secrets() provider.SecretPolicy { return p.policy }

// OwnerKey is the fixed owner tag key the provider writes, "" when it takes
// the resident's.
func (p *Provider) OwnerKey() string { return p.described.OwnerKey }

// CredentialSecrets asks the provider for the secrets inside a credential
// value in its own format; a provider without auth/secrets has none.
func (p *Provider) CredentialSecrets(key, value string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), p.callTimeout)
	defer cancel()
	var res wire.AuthSecretsResult
	if err := p.call(ctx, wire.MethodAuthSecrets, wire.AuthSecretsParams{Key: key, Value: value}, &res); err != nil {
		return nil
	}
	return res.Secrets
}

func (p *Provider) ApplyAuth(ctx context.Context, creds map[string]string) error {
	p.mu.Lock()
	p.creds = creds
	p.mu.Unlock()
	return p.call(ctx, wire.MethodAuthApply, wire.AuthApplyParams{Credentials: creds}, nil)
}

func (p *Provider) OnUnauthorized(hook func(reason string)) {
	p.mu.Lock()
	p.unauth = hook
	p.mu.Unlock()
}

func (p *Provider) Create(ctx context.Context, spec protocol.Spec, owner provider.Owner, tags map[string]string) (string, error) {
	if err := provider.RefuseUnannounced(p.Info(), nil, &spec); err != nil {
		return "", err
	}
	if tags == nil {
		tags = map[string]string{}
	}
	var res wire.CreateResult
	err := p.call(ctx, wire.MethodCreate, wire.CreateParams{Spec: spec, Owner: wire.Owner(owner), Tags: tags}, &res)
	if err == nil && res.SandboxID == "" {
		err = protocol.Errorf(protocol.KindTransient, "provider %s created a sandbox with no id", p.name)
	}
	if err == nil {
		p.owners.add(res.SandboxID, owner.Key, owner.InstallID)
	}
	return res.SandboxID, err
}

func (p *Provider) ListOwned(ctx context.Context, owner provider.Owner) ([]protocol.Sandbox, error) {
	var res wire.ListOwnedResult
	if err := p.call(ctx, wire.MethodListOwned, wire.ListOwnedParams{Owner: wire.Owner(owner)}, &res); err != nil {
		return nil, err
	}
	out := make([]protocol.Sandbox, 0, len(res.Sandboxes))
	for _, sb := range res.Sandboxes {
		// The contract is the resident's to keep: never another install's.
		if sb.Tags[owner.Key] != owner.InstallID {
			continue
		}
		p.owners.add(sb.SandboxID, owner.Key, owner.InstallID)
		out = append(out, sb)
	}
	return out, nil
}

func (p *Provider) ReadOwner(ctx context.Context, sandboxID, ownerKey string) (string, error) {
	var res wire.ReadOwnerResult
	err := p.call(ctx, wire.MethodReadOwner, wire.ReadOwnerParams{SandboxID: sandboxID, OwnerKey: ownerKey}, &res)
	switch {
	case err == nil:
		p.owners.add(sandboxID, ownerKey, res.Owner)
	case protocol.KindOf(err) == protocol.KindNotFound:
		p.owners.forget(sandboxID)
	}
	return res.Owner, err
}

func (p *Provider) Terminate(ctx context.Context, sandboxID string) (bool, error) {
	var res wire.TerminateResult
	err := p.call(ctx, wire.MethodTerminate, wire.SandboxParams{SandboxID: sandboxID}, &res)
	if err == nil {
		p.owners.forget(sandboxID)
	}
	return res.Existed, err
}

func (p *Provider) WriteFile(ctx context.Context, sandboxID, path string, data []byte, mode *uint32) error {
	return p.call(ctx, wire.MethodWriteFile, wire.WriteFileParams{SandboxID: sandboxID, Path: path, Data: data, Mode: mode}, nil)
}

func (p *Provider) ListVolumes(ctx context.Context, owner provider.Owner) ([]protocol.Volume, error) {
	var res wire.ListVolumesResult
	err := p.call(ctx, wire.MethodListVolumes, wire.ListVolumesParams{Owner: wire.Owner(owner)}, &res)
	return res.Volumes, err
}

func (p *Provider) ListDir(ctx context.Context, owner provider.Owner, root, path string, limit int) ([]protocol.DirEntry, bool, error) {
	var res wire.ListDirResult
	err := p.call(ctx, wire.MethodListDir, wire.ListDirParams{Owner: wire.Owner(owner), Root: root, Path: path, Limit: limit}, &res)
	if len(res.Entries) > limit && limit > 0 {
		res.Entries, res.Truncated = res.Entries[:limit], true
	}
	return res.Entries, res.Truncated, err
}

// Close runs the shutdown ladder on the live child.
func (p *Provider) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	c := p.child
	p.mu.Unlock()
	if c != nil {
		c.stop(stopGrace)
		c.settle(stopGrace)
	}
	return nil
}

// notification takes the provider's messages on the read loop; it never
// blocks, so one slow exec cannot stall another.
func (p *Provider) notification(c *child, req *jsonrpc2.Request) {
	switch req.Method {
	case wire.NotifyExecOutput:
		var m wire.ExecOutput
		if decodeNotif(req, &m) == nil {
			if e := p.execOf(m.ExecID); e != nil {
				e.output(m.Stream, m.Data, m.Offset)
			}
		}
	case wire.NotifyExecExit:
		var m wire.ExecExit
		if decodeNotif(req, &m) == nil {
			if e := p.execOf(m.ExecID); e != nil {
				e.exit(m)
			}
		}
	case wire.NotifyStoreData:
		var m wire.StoreData
		if decodeNotif(req, &m) == nil {
			p.mu.Lock()
			rs := p.reads[m.StreamID]
			p.mu.Unlock()
			if rs != nil {
				rs.buf.push(m.Data)
			}
		}
	case wire.NotifyConnData, wire.NotifyConnCredit, wire.NotifyConnClose:
		p.connNotification(req)
	case wire.NotifyUnauthorized:
		var m wire.Unauthorized
		_ = decodeNotif(req, &m)
		p.mu.Lock()
		hook := p.unauth
		p.mu.Unlock()
		if hook != nil {
			hook(m.Reason)
		}
	case wire.NotifyProgress:
		var m protocol.PullProgress
		if decodeNotif(req, &m) == nil {
			p.notify(protocol.NotifyPullProgress, m)
		}
	default:
		p.logger().Debug("unknown notification from the provider", stringField("method", req.Method))
	}
}

func (p *Provider) execOf(id string) *process {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.execs[id]
}

var errNoCommand = errors.New("no command")

var _ = regexp.Compile
