package resident

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Lifecycle states of a session.
type lifecycle int32

const (
	stateNew lifecycle = iota
	stateInitializing
	stateReady
)

type session struct {
	opts      Options
	prov      provider.Provider
	store     provider.Store        // nil when the provider has none
	writer    provider.FileWriter   // nil when the provider has none
	snapshots provider.Snapshotter  // nil when the provider has none
	builder   provider.ImageBuilder // nil when the provider has none
	// pools are the warm pools, nil when the provider has no Pooler;
	// started by initialize.
	pools  *pools
	detach provider.Detacher // nil when the provider has none
	// The optional abilities of issue 14, nil when the provider lacks one.
	files    provider.SandboxFiles
	streamer provider.StreamWriter
	volumes  provider.VolumeAdmin
	// watch sends sandbox/changed once the host asked (see watcher).
	watch  *watcher
	log    *zap.Logger
	scrub  *hardening.Scrubber
	stream *frameStream
	// budget bounds the bytes held for the host's requests (see hostBudget).
	budget *hostBudget
	// pumps counts the output pumps running (see pumpLimit).
	pumps atomic.Int64

	// base is the parent of every request context; cancelAll ends them all
	// with a cause that decides the error kind they answer with.
	base      context.Context
	cancelAll context.CancelCauseFunc
	handlers  sync.WaitGroup

	state atomic.Int32
	owner provider.Owner // set once initialize succeeds; read only after

	mu       sync.Mutex
	inflight map[string]context.CancelCauseFunc // request id -> cancel
	queues   map[string]chan struct{}           // ordering key -> last ticket
	execs    map[string]*runningExec            // exec id -> exec, until it answers
	uploads  map[string]*upload                 // stream id -> streamed write_file, until it answers
	running  int                                // execs holding a concurrency slot

	netState // forwards and egress (issue 20)

	isExpired    atomic.Bool
	expiredOnce  sync.Once
	expiredCh    chan struct{}
	shutdownOnce sync.Once
	shutdownCh   chan struct{}
	expiryTimer  *time.Timer
}

func newSession(opts Options) *session {
	s := &session{
		opts:       opts,
		prov:       opts.Provider,
		log:        opts.Logger.Named("resident"),
		scrub:      opts.Scrubber,
		inflight:   map[string]context.CancelCauseFunc{},
		queues:     map[string]chan struct{}{},
		execs:      map[string]*runningExec{},
		uploads:    map[string]*upload{},
		expiredCh:  make(chan struct{}),
		shutdownCh: make(chan struct{}),
	}
	s.budget = newHostBudget(opts.Limits.MaxHeldRequestBytes, int64(opts.Limits.MaxFrameBytes))
	// An optional ability counts when the provider has it and says so: an
	// external provider implements every interface, and its handshake says
	// which it has.
	caps := opts.Provider.Info().Capabilities
	if st, ok := opts.Provider.(provider.Store); ok && caps.Store {
		s.store = st
	}
	if w, ok := opts.Provider.(provider.FileWriter); ok && caps.WriteFile {
		s.writer = w
	}
	if d, ok := opts.Provider.(provider.Detacher); ok && caps.Detach {
		s.detach = d
	}
	if sn, ok := opts.Provider.(provider.Snapshotter); ok && caps.Snapshot {
		s.snapshots = sn
	}
	if b, ok := opts.Provider.(provider.ImageBuilder); ok && caps.ImageBuild {
		s.builder = b
	}
	if pl, ok := opts.Provider.(provider.Pooler); ok && caps.Pool {
		s.pools = newPools(pl, opts.Provider.Terminate, s.log, opts.Now)
	}
	if f, ok := opts.Provider.(provider.SandboxFiles); ok && caps.SandboxFiles {
		s.files = f
	}
	if w, ok := opts.Provider.(provider.StreamWriter); ok && caps.Upload {
		s.streamer = w
	}
	if v, ok := opts.Provider.(provider.VolumeAdmin); ok && caps.VolumeAdmin && s.store != nil {
		s.volumes = v
	}
	s.base, s.cancelAll = context.WithCancelCause(context.Background())
	s.watch = newWatcher(s)
	s.initNet()
	return s
}

func (s *session) expired() bool { return s.isExpired.Load() }

// expire runs the credentials-expired path once, from the expiry timer or
// the provider's unauthorized hook: tell the host, fail everything in flight
// with unauthorized, and let Serve exit with ErrCredentialsExpired.
func (s *session) expire(reason string) {
	s.expiredOnce.Do(func() {
		s.log.Warn("credentials expired", zap.String("reason", reason))
		// Fence new requests first, tell the host, then fail what is in
		// flight; Serve, woken last, waits for those answers.
		s.isExpired.Store(true)
		msg := "credentials expired: " + reason + "; respawn the resident with fresh credentials"
		if err := s.stream.writeScrubbedNotification(protocol.NotifyCredentialsExpired, protocol.CredentialsExpired{Message: msg}); err != nil {
			s.log.Debug("credentials_expired not delivered", zap.Error(err))
		}
		s.cancelAll(errExpired)
		close(s.expiredCh)
	})
}

func (s *session) shutdown() {
	s.shutdownOnce.Do(func() { close(s.shutdownCh) })
}

// notifyText sends a provider notification with text fields (scrubbed).
func (s *session) notifyText(method string, params any) {
	if err := s.stream.writeScrubbedNotification(method, params); err != nil {
		s.log.Debug("notification not delivered", zap.String("method", method), zap.Error(err))
	}
}
