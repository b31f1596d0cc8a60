package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/resident-dev/resident/internal/keeper/keeperbin"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Version is the Kubernetes provider's version, reported by Info.
const Version = "0.1.0"

// Options an operator sets with --provider-opt.
var (
	optNamespace = provider.Option[string]{Name: "namespace", Doc: "namespace of the sandboxes (empty: the kubeconfig context's, else \"default\")"}
	optContext   = provider.Option[string]{Name: "context", Doc: "kubeconfig context (empty: the current one)"}
	optKeeper    = provider.Option[string]{Name: "keeper_image", Doc: "image with the keeper at /.resident/keeper, on the nodes or in a registry they reach (empty: resident-keeper:<digest>)"}
	optPolicies  = provider.Option[bool]{Name: "network_policy_enforced", Default: true, Doc: "the cluster's network plugin enforces NetworkPolicy (announced as network_control; spec.network none relies on it)"}
	optKeeperDir = provider.Option[string]{Name: "keeper_host_dir", Doc: "a directory on every node holding KeeperHostPath's <digest prefix>/keeper: pods mount it read-only instead of running the keeper image's init container (a container start and a kubelet relist less per create; needs hostPath volumes, which Pod Security's baseline and restricted levels refuse)"}
	optExec      = provider.Option[string]{Name: "exec", Default: modeChannel, Doc: "how execs reach a pod's keeper: channel (the default: one attach stream per pod, sealed, so the node's pod log holds only ciphertext; terminals, users, detached execs, sandbox files) or exec (the fallback: one exec subresource stream per command, none of those)"}
)

func init() {
	provider.Register("kubernetes", "pods on a Kubernetes cluster (KUBECONFIG, ~/.kube/config or in-cluster), hardened by default",
		New, optNamespace, optContext, optKeeper, optKeeperDir, optPolicies, optExec)
}

// Interface guards.
var (
	_ provider.Provider    = (*Provider)(nil)
	_ provider.FileWriter  = (*Provider)(nil)
	_ provider.Store       = (*Provider)(nil)
	_ provider.OwnerMemory = (*Provider)(nil)
	_ provider.Process     = (*process)(nil)
)

// Provider drives one namespace of a cluster through the API server. Like
// Docker's, it keeps no state of its own: everything is labels on pods,
// network policies and claims.
type Provider struct {
	log    *zap.Logger
	now    func() time.Time
	timing timing

	base        *rest.Config // from the kubeconfig; ApplyAuth may add a token
	mu          sync.RWMutex
	cfg         *rest.Config
	cs          *apiClient
	namespace   string
	keeperImage string
	// keeperHostDir, when set, is the node directory of the keeper
	// (KeeperHostPath): no init container.
	keeperHostDir string
	keeperDigest  string // the embedded keeper's, for KeeperHostPath
	enforced      bool
	grants        []provider.VolumeGrant
	channel       bool // modeChannel: pods serve the keeper channel on their attach stream

	holdersMu sync.Mutex
	holders   map[string]*holder // by sandbox id

	unauthorized atomic.Pointer[func(reason string)]
	running      runningExecs
	// terminated are the sandboxes this provider deleted: an exec in one
	// is not_found at once, although its pod takes a moment to go.
	terminated sync.Map
}

// timing holds every bound the provider applies on its own; doc.go states
// them, tests shrink them.
type timing struct {
	api        time.Duration // one call as a whole (Info.CallTimeout)
	podStart   time.Duration // create: the pod Running, or a typed error
	killWait   time.Duration // kill frame, then this long before "keeper kill"
	reader     time.Duration // a store reader pod Running
	deleteWait time.Duration // terminate's grace period, in seconds on the pod
}

var defaultTiming = timing{
	api:        30 * time.Second,
	podStart:   120 * time.Second,
	killWait:   time.Second,
	reader:     60 * time.Second,
	deleteWait: time.Second,
}

// New reads the cluster from the usual places (KUBECONFIG, ~/.kube/config,
// else the in-cluster service account). It does not contact the cluster;
// ApplyAuth (initialize) does.
func New(cfg provider.Config) (provider.Provider, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	overrides := &clientcmd.ConfigOverrides{CurrentContext: optContext.From(cfg.Options)}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	restCfg, err := loader.ClientConfig()
	if err != nil {
		return nil, protocol.Errorf(protocol.KindInvalidRequest, "kubernetes: no cluster configured (KUBECONFIG, ~/.kube/config, in-cluster): %v", err)
	}
	ns := optNamespace.From(cfg.Options)
	if ns == "" {
		if ns, _, err = loader.Namespace(); err != nil || ns == "" {
			ns = "default"
		}
	}
	return newProvider(cfg, restCfg, ns)
}

func newProvider(cfg provider.Config, restCfg *rest.Config, namespace string) (*Provider, error) {
	p := &Provider{log: cfg.Logger, now: cfg.Now, timing: defaultTiming, namespace: namespace,
		keeperImage: optKeeper.From(cfg.Options), keeperHostDir: optKeeperDir.From(cfg.Options), enforced: optPolicies.From(cfg.Options), grants: slices.Clone(cfg.AllowVolumes)}
	if p.log == nil {
		p.log = zap.NewNop()
	}
	switch mode := optExec.From(cfg.Options); mode {
	case modeChannel, "":
		p.channel = true
	case modeExec:
		// The fallback: no attach stream (a proxy that refuses them, an
		// API server without WebSocket or SPDY upgrades for attach).
	default:
		return nil, protocol.Errorf(protocol.KindInvalidRequest, "kubernetes: --provider-opt exec=%q: want %s or %s", mode, modeChannel, modeExec)
	}
	p.log = p.log.Named("provider.kubernetes")
	routeKlog(p.log)
	if p.now == nil {
		p.now = time.Now
	}
	if p.keeperImage == "" {
		bin, err := keeperbin.For("amd64")
		if err != nil {
			return nil, fmt.Errorf("kubernetes: %w", err)
		}
		p.keeperImage = KeeperImage(bin.Digest)
		p.keeperDigest = bin.Digest
	}
	if p.keeperHostDir != "" {
		if !path.IsAbs(p.keeperHostDir) {
			return nil, protocol.Errorf(protocol.KindInvalidRequest, "kubernetes: --provider-opt keeper_host_dir=%q must be absolute", p.keeperHostDir)
		}
		if p.keeperDigest == "" {
			bin, err := keeperbin.For("amd64")
			if err != nil {
				return nil, fmt.Errorf("kubernetes: %w", err)
			}
			p.keeperDigest = bin.Digest
		}
	}
	p.base = rest.CopyConfig(restCfg)
	if err := p.useConfig(p.base); err != nil {
		return nil, err
	}
	return p, nil
}

// KeeperImage is the keeper image's default name for a keeper digest: the
// one-file image an operator loads on the nodes (or pushes) once per
// keeper version.
func KeeperImage(digest string) string { return "resident-keeper:" + digest[:16] }

// KeeperHostPath is where, under --provider-opt keeper_host_dir=DIR, a
// node holds the keeper of a digest: DIR/<digest prefix>/keeper (mode
// 0555), put there once per keeper version, as the keeper image would be
// loaded. The pod mounts DIR/<digest prefix> read-only at the keeper's
// directory; a node without it fails the sandbox container's start at
// once (invalid_request).
func KeeperHostPath(dir, digest string) string { return path.Join(dir, digest[:16], "keeper") }

// useConfig builds the clients for cfg, watching every response for 401.
func (p *Provider) useConfig(cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = p.watchUnauthorized
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := newAPIClient(cfg)
	if err != nil {
		return protocol.Errorf(protocol.KindInvalidRequest, "kubernetes client: %v", err)
	}
	p.mu.Lock()
	p.cfg, p.cs = cfg, cs
	p.mu.Unlock()
	return nil
}

func (p *Provider) client() (*apiClient, *rest.Config) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.cs, p.cfg
}

// Info names the provider and its features.
func (p *Provider) Info() provider.Info {
	info := provider.Info{
		Name:    "kubernetes",
		Version: Version,
		Capabilities: protocol.Capabilities{
			Store: true, WriteFile: true, Stdin: true, Isolation: true, NetworkControl: p.enforced,
			ResourceLimits: true, ReadOnlyVolumes: true, ImagePull: true, CredentialExpiry: true,
		},
		CallTimeout: p.timing.api,
	}
	p.netCapabilities(&info.Capabilities)
	if p.channel {
		c := &info.Capabilities
		c.Detach, c.TTY, c.ExecUser, c.SandboxFiles, c.Upload = true, true, true, true, true
		info.DetachedBufferBytes = keeperproto.DefaultRing
	}
	return info
}

// Secrets: the host's bearer token (initialize.credentials) is registered
// with the scrubber by the resident; the kubeconfig's credentials are files
// the resident never prints. Service account tokens are JWTs, which the
// resident's own token patterns cover.
func (p *Provider) Secrets() provider.SecretPolicy {
	return provider.SecretPolicy{EnvPrefixes: []string{}}
}

// CredentialToken is the initialize.credentials key of a bearer token for
// the API server; it replaces the kubeconfig's credentials.
const CredentialToken = "kubernetes_token"

// ApplyAuth takes the host's bearer token, if any, and checks that the API
// server answers.
func (p *Provider) ApplyAuth(ctx context.Context, creds map[string]string) error {
	if token := creds[CredentialToken]; token != "" {
		cfg := rest.AnonymousClientConfig(p.base)
		cfg.BearerToken = token
		if err := p.useConfig(cfg); err != nil {
			return err
		}
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	cs, _ := p.client()
	if _, err := cs.CoreV1().Pods(p.namespace).List(cctx, listOne); err != nil {
		return classify(cctx, "kubernetes api", err)
	}
	p.sweepReaders(ctx)
	return nil
}

// OnUnauthorized installs the hook fired when the API server answers 401.
func (p *Provider) OnUnauthorized(hook func(reason string)) { p.unauthorized.Store(&hook) }

func (p *Provider) watchUnauthorized(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusUnauthorized {
			if hook := p.unauthorized.Load(); hook != nil {
				(*hook)("kubernetes API server answered 401 Unauthorized")
			}
		}
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Close releases nothing the cluster holds: sandboxes keep running.
// Its channels are let go: the keepers kill the non-detached execs they
// started over them.
func (p *Provider) Close() error {
	p.closeHolders()
	return nil
}

// callCtx bounds one call as a whole.
func (p *Provider) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, p.timing.api, errAPITimeout)
}

var errAPITimeout = errors.New("kubernetes API server did not answer in time")
