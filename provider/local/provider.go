package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/keeperexec"
)

// Version is the local provider's version, reported by Info.
const Version = "0.1.0"

func init() {
	provider.Register("local", "host processes in per-sandbox directories, in namespaces of their own under bubblewrap; no daemon (development and trusted code)", New)
}

// Every interface local implements, optional ones included: a signature
// that drifts from one would otherwise turn the feature off silently.
var (
	_ provider.Provider     = (*Provider)(nil)
	_ provider.Store        = (*Provider)(nil)
	_ provider.FileWriter   = (*Provider)(nil)
	_ provider.SandboxFiles = (*Provider)(nil)
	_ provider.StreamWriter = (*Provider)(nil)
	_ provider.VolumeAdmin  = (*Provider)(nil)
)

// Provider runs sandboxes as directories and host processes. It isolates
// nothing (see the package doc): it is for development and trusted code.
// All state that must survive a restart lives on disk; the maps below only
// track what this instance started (running execs, lifetime timers).
type Provider struct {
	keeperexec.Relay // port forwards and egress through the keeper in the sandbox

	log        *zap.Logger
	now        func() time.Time
	sandboxes  string                 // StateDir/local/sandboxes: one directory per sandbox
	volumes    string                 // StateDir/local/volumes: one directory per volume
	volumeMeta string                 // StateDir/local/volume-meta: created_at and owner of each volume
	grants     []provider.VolumeGrant // volumes without an owner the operator allowed
	trash      string                 // StateDir/local/trash: sandboxes being removed
	keepers    string                 // StateDir/local/keeper: the keeper binary, by digest

	keeperOnce sync.Once
	keeperPath string // the extracted keeper's directory
	keeperErr  error

	isolateOnce sync.Once
	bwrap       string // bwrap's path once found working; "" runs execs unisolated

	startOnce sync.Once
	startErr  error // why Start could not make the state directories

	mu      sync.Mutex
	closed  bool
	running map[string]map[*process]struct{} // sandbox id -> live execs
	groups  map[string]map[int]uint64        // sandbox id -> process groups it had (unisolated) -> leader start time
	inits   map[string]*sandboxInit          // sandbox id -> its init and channel (isolated)
	tags    map[string]map[string]string     // sandbox id -> its tags, as created or read (KnownOwner)
	metas   map[string]cachedMeta            // sandbox id -> its meta.json as last read
	timers  map[string]*time.Timer           // sandbox id -> lifetime timer
	ended   map[string]bool                  // sandbox ids whose lifetime ended: no exec may start
	wg      sync.WaitGroup                   // lifetime callbacks in flight
}

// New builds a local provider keeping its state under cfg.StateDir/local.
// It has no side effects (resident --help builds none, but a host of the
// registry may build one only to read its Info): Start does the rest.
func New(cfg provider.Config) (provider.Provider, error) {
	if cfg.StateDir == "" {
		return nil, errors.New("local: a state directory is required")
	}
	base, err := filepath.Abs(filepath.Join(cfg.StateDir, "local"))
	if err != nil {
		return nil, fmt.Errorf("local: state dir: %w", err)
	}
	p := &Provider{
		log:        cfg.Logger,
		now:        cfg.Now,
		sandboxes:  filepath.Join(base, "sandboxes"),
		volumes:    filepath.Join(base, "volumes"),
		volumeMeta: filepath.Join(base, "volume-meta"),
		trash:      filepath.Join(base, "trash"),
		keepers:    filepath.Join(base, "keeper"),
		grants:     slices.Clone(cfg.AllowVolumes),
		running:    map[string]map[*process]struct{}{},
		groups:     map[string]map[int]uint64{},
		inits:      map[string]*sandboxInit{},
		tags:       map[string]map[string]string{},
		metas:      map[string]cachedMeta{},
		timers:     map[string]*time.Timer{},
		ended:      map[string]bool{},
	}
	if p.log == nil {
		p.log = zap.NewNop()
	}
	p.log = p.log.Named("provider.local")
	if p.now == nil {
		p.now = time.Now
	}
	return p, nil
}

// Start makes the state directories, finishes what an earlier instance
// left half done (a create or terminate cut short by a crash) and arms the
// lifetime timers of the sandboxes that exist. ApplyAuth, the provider's
// first call, runs it, as Docker starts its sweep there; every call that
// needs the state runs it too, for an embedder that calls Create first.
// Once only; after Close it makes the directories but arms nothing.
func (p *Provider) Start() error {
	p.startOnce.Do(func() {
		for _, dir := range []string{p.sandboxes, p.volumes, p.volumeMeta, p.trash} {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				p.startErr = fmt.Errorf("local: state dir: %w", err)
				return
			}
		}
		p.recover()
	})
	return p.startErr
}

// Info says what local offers: the store, write_file and stdin, isolation
// where bwrap works (it is probed once, here if nothing did yet), and no
// enforcement of CPU, memory or read-only volumes. network_control stays
// false: spec.network is "host" or loopback only, not a choice of network.
func (p *Provider) Info() provider.Info {
	var detachedBuffer int64
	if p.isolated() { // the sandbox's keeper holds detached execs
		detachedBuffer = keeperproto.DefaultRing
	}
	return provider.Info{
		Name:                "local",
		DetachedBufferBytes: detachedBuffer,
		Version:             Version,
		Capabilities: protocol.Capabilities{
			Store:        true,
			WriteFile:    true,
			Stdin:        true,
			SandboxFiles: true,
			Upload:       true,
			VolumeAdmin:  true,
			Isolation:    p.isolated(),
			Detach:       p.isolated(),
			ExecUser:     p.isolated(), // the keeper switches user, in the sandbox's /etc/passwd
			TTY:          p.isolated(),
			// The keeper's relay, proxy and attach (net.go), in the
			// sandbox's one network namespace.
			PortForward: p.isolated(),
			Egress:      p.isolated(),
			// cpus, memory_mb and pids_limit, through cgroup v1 as root.
			ResourceLimits: limitsEnforced(),
		},
	}
}

// Secrets names the resident variables that hold secrets and a few token
// shapes common enough to be worth scrubbing from anything a local process
// prints: local runs with the developer's own tools and credentials nearby.
func (p *Provider) Secrets() provider.SecretPolicy {
	return provider.SecretPolicy{
		EnvPrefixes: []string{"RESIDENT_SECRET_", "RESIDENT_TOKEN"},
		Tokens:      tokenPatterns(),
	}
}

// tokenPatterns compiles on first use, not at init: every binary that links
// the local provider would otherwise pay ~2 ms of start-up for regexps with
// counted repetition, even when another provider is loaded.
var tokenPatterns = sync.OnceValue(func() []hardening.TokenPattern {
	return []hardening.TokenPattern{
		{Name: "github-token", Prefixes: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, Regexp: regexp.MustCompile(`gh[pousr]_[A-Za-z0-9]{36,251}`), MaxLen: 255},
		{Name: "github-fine-grained-token", Prefixes: []string{"github_pat_"}, Regexp: regexp.MustCompile(`github_pat_[A-Za-z0-9_]{22,244}`), MaxLen: 255},
		{Name: "gitlab-token", Prefixes: []string{"glpat-"}, Regexp: regexp.MustCompile(`glpat-[A-Za-z0-9_-]{20,100}`), MaxLen: 106},
		{Name: "aws-access-key-id", Prefixes: []string{"AKIA", "ASIA"}, Regexp: regexp.MustCompile(`A[KS]IA[A-Z0-9]{16}`), MaxLen: 20},
	}
})

// ApplyAuth ignores credentials (local has no backend to log in to) and
// starts the provider (Start).
func (p *Provider) ApplyAuth(ctx context.Context, creds map[string]string) error { return p.Start() }

// OnUnauthorized is a no-op: nothing local can ever become unauthorized.
func (p *Provider) OnUnauthorized(hook func(reason string)) {}

// Close stops the lifetime timers and waits for any expiry in progress. It
// leaves sandboxes and their processes alone: a later instance on the same
// state dir owns them again.
func (p *Provider) Close() error {
	p.mu.Lock()
	p.closed = true
	for id, t := range p.timers {
		t.Stop()
		delete(p.timers, id)
	}
	inits := p.inits
	p.inits = map[string]*sandboxInit{}
	p.mu.Unlock()
	for _, init := range inits {
		init.release() // let go, not kill: a later instance takes the channel over
	}
	p.wg.Wait()
	return nil
}
