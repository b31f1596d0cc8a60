package docker

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/keeperexec"
)

// Version is the Docker provider's version, reported by Info.
const Version = "0.1.0"

func init() {
	provider.Register("docker", "containers on a Docker engine (DOCKER_HOST; local or remote), hardened by default", New, OptExec, OptFiles, OptForward)
}

// Interface guards: every optional ability the resident finds by type
// assertion, so a signature drift breaks the build instead of silently
// turning the ability off.
var (
	_ provider.Provider          = (*Provider)(nil)
	_ provider.Store             = (*Provider)(nil)
	_ provider.FileWriter        = (*Provider)(nil)
	_ provider.OwnerMemory       = (*Provider)(nil)
	_ provider.Process           = (*process)(nil)
	_ provider.CredentialSecrets = (*Provider)(nil)
	_ provider.SandboxFiles      = (*Provider)(nil)
	_ provider.StreamWriter      = (*Provider)(nil)
	_ provider.VolumeAdmin       = (*Provider)(nil)
	_ provider.Detacher          = (*Provider)(nil)
)

// Provider drives one Docker engine through the Engine API. It keeps no
// state of its own beyond caches: everything it needs after a restart is in
// the engine, as labels.
type Provider struct {
	keeperexec.Relay // port forwards and egress through the keeper in the sandbox

	cli    *client.Client
	quick  quickConns // quickGet's connections
	log    *zap.Logger
	notify func(method string, params any)
	now    func() time.Time
	timing timing

	unauthorized atomic.Pointer[func(reason string)]
	registry     atomic.Pointer[registryAuth]

	helperMu sync.Mutex
	helpers  map[string]helperRefs // engine architecture -> what ensureHelpers made

	sweepOnce sync.Once
	stopSweep func() // set by startSweep; cancels the sweep and waits for it

	known knownSandboxes
	// idle are the idle names of the pool members this provider made or
	// listed (pool.go), so a claim is one rename.
	idle idleNames
	// execMode is the mode new sandboxes are made in (OptExec); chans
	// are the channels to channel-mode sandboxes (channel.go).
	execMode string
	// files is how big files travel (OptFiles, archivefiles.go); the
	// counts are of files that took the archive (tests look).
	files                       string
	archiveReads, archiveWrites atomic.Int64
	// serveFlags are the keeper's serve flags before -lifetime: "-stdio"
	// (a test gives one the keeper refuses, to see the fallback).
	serveFlags []string
	chans      holders
	// direct is the path of connections dialled inside a container's
	// network namespace (netdirect*.go); netPaths logs which path they take.
	direct    directDial
	netPaths  netPaths
	watchOnce sync.Once      // watchEngine starts once
	watchers  sync.WaitGroup // watchEngine, until life ends
	// running are the execs this provider started that have not ended.
	running runningExecs

	grants []provider.VolumeGrant // volumes not ours that the operator allowed
	// life ends at Close; background removals (cleanup.go) run under it.
	life     context.Context
	endLife  context.CancelFunc
	cleanups sync.WaitGroup
}

// timing holds every bound the provider applies on its own. Tests shrink
// them; doc.go states the defaults.
type timing struct {
	api         time.Duration // one control call (inspect, create, remove...)
	pullIdle    time.Duration // an image pull with no progress message
	engineGrace time.Duration // an exec tolerates an unreachable engine this long
	poll        time.Duration // longest pause between exec-state polls
	drainIdle   time.Duration // after the main process exited: stream silent this long ends it
	drainMax    time.Duration // after the main process exited: at most this much draining
	killWait    time.Duration // kill frame, then this long before the kill exec
	stopGrace   time.Duration // terminate: SIGTERM, then SIGKILL after this
	helperStart time.Duration // a store helper never started after this long is an orphan
	// refusalSettle: an exec the runtime refused in a sandbox the engine
	// still calls running waits this long for it to stop (a terminate
	// racing the exec) before the refusal is reported as transient.
	refusalSettle time.Duration
	// startCheck: a channel exec or open without an answer for this long
	// looks at the sandbox's state once (a paused one never answers).
	startCheck time.Duration
	cleanupMax time.Duration // a background removal retries this long in all
	closeWait  time.Duration // Close waits this long for background removals
}

var defaultTiming = timing{
	api:         30 * time.Second,
	pullIdle:    2 * time.Minute,
	engineGrace: 15 * time.Second,
	poll:        250 * time.Millisecond,
	drainIdle:   300 * time.Millisecond,
	drainMax:    5 * time.Second,
	killWait:    time.Second,
	stopGrace:   3 * time.Second,
	helperStart: 5 * time.Minute,

	refusalSettle: 2 * time.Second,
	startCheck:    time.Second,
	cleanupMax:    2 * time.Minute,
	closeWait:     5 * time.Second,
}

// New builds a provider for the engine the usual Docker environment names
// (DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH, DOCKER_API_VERSION). It
// does not contact the engine; ApplyAuth (initialize) does, negotiating the
// API version down to the engine's (1.40 at the oldest).
func New(cfg provider.Config) (provider.Provider, error) {
	return newProvider(cfg, client.FromEnv)
}

func newProvider(cfg provider.Config, opts ...client.Opt) (*Provider, error) {
	p := &Provider{log: cfg.Logger, notify: cfg.Notify, now: cfg.Now, timing: defaultTiming, helpers: map[string]helperRefs{}, grants: slices.Clone(cfg.AllowVolumes)}
	p.serveFlags = []string{"-stdio"}
	switch p.execMode = OptExec.From(cfg.Options); p.execMode {
	case ExecModeChannel, ExecModeExec:
	default:
		return nil, protocol.Errorf(protocol.KindInvalidRequest, "docker: option exec=%q: want %q or %q", p.execMode, ExecModeChannel, ExecModeExec)
	}
	switch p.files = OptFiles.From(cfg.Options); p.files {
	case filesArchive, filesChannel:
	default:
		return nil, protocol.Errorf(protocol.KindInvalidRequest, "docker: option files=%q: want %q or %q", p.files, filesArchive, filesChannel)
	}
	switch p.direct.mode = OptForward.From(cfg.Options); p.direct.mode {
	case ForwardAuto, ForwardChannel:
	default:
		return nil, protocol.Errorf(protocol.KindInvalidRequest, "docker: option forward=%q: want %q or %q", p.direct.mode, ForwardAuto, ForwardChannel)
	}
	p.life, p.endLife = context.WithCancel(context.Background())
	if p.log == nil {
		p.log = zap.NewNop()
	}
	p.log = p.log.Named("provider.docker")
	if p.notify == nil {
		p.notify = func(string, any) {}
	}
	if p.now == nil {
		p.now = time.Now
	}
	opts = append(opts, client.WithHTTPResponseHook(p.watchUnauthorized))
	cli, err := client.New(opts...)
	if err != nil {
		return nil, kindErr(protocol.KindInvalidRequest, err, "docker client")
	}
	p.cli = cli
	return p, nil
}

// Info names the provider and its features.
func (p *Provider) Info() provider.Info {
	channelMode := p.execMode == ExecModeChannel
	return provider.Info{
		Name:    "docker",
		Version: Version,
		Capabilities: protocol.Capabilities{
			Store: true, WriteFile: true, Stdin: true, Isolation: true, NetworkControl: true,
			ResourceLimits: true, ReadOnlyVolumes: true, ImagePull: true, CredentialExpiry: true,
			Pool: true, Snapshot: true, ImageBuild: true,
			SandboxFiles: true, Upload: true, VolumeAdmin: true,
			PortForward: true, Egress: true,
			// The keeper channel's: a sandbox on the exec path (an older
			// resident's, or a fallback) refuses them by name.
			Detach: channelMode, ExecUser: channelMode, TTY: channelMode,
		},
		CallTimeout:         p.timing.api,
		DetachedBufferBytes: keeperproto.DefaultRing,
	}
}

// OnUnauthorized installs the hook fired when the engine (or a proxy in
// front of it) answers 401.
func (p *Provider) OnUnauthorized(hook func(reason string)) { p.unauthorized.Store(&hook) }

// watchUnauthorized sees every response from the engine. A 401 means the
// credentials that reach the engine are no longer good. Pull, push and login
// are left out: there a 401 speaks of a registry's credentials for one
// image, which the host fixes per image, not by re-authenticating.
func (p *Provider) watchUnauthorized(resp *http.Response) {
	if resp == nil || resp.StatusCode != http.StatusUnauthorized {
		return
	}
	path := ""
	if resp.Request != nil && resp.Request.URL != nil {
		path = resp.Request.URL.Path
	}
	for _, registryOp := range []string{"/images/create", "/push", "/auth", "/distribution/"} {
		if strings.Contains(path, registryOp) {
			return
		}
	}
	if hook := p.unauthorized.Load(); hook != nil {
		(*hook)("docker engine answered 401 Unauthorized")
	}
}

// Close stops the start sweep and releases the client's idle connections;
// sandboxes keep running.
func (p *Provider) Close() error {
	p.sweepOnce.Do(func() {}) // no sweep may start after Close
	if p.stopSweep != nil {
		p.stopSweep()
	}
	p.awaitCleanups() // ends life
	p.watchers.Wait()
	p.chans.closeAll()
	p.quick.close()
	return p.cli.Close()
}

// callCtx bounds one call: a provider method as a whole, or one engine
// call within it (a bound inside another ends with the outer one). Its
// cancel func must be called.
func (p *Provider) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, p.timing.api, errEngineTimeout)
}

// errEngineTimeout is the cause when the provider's own bound, not the
// caller's context, ended a call: the engine is hung, which is transient.
var errEngineTimeout = errors.New("docker engine did not answer in time")
