package resident

import (
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Options configure one session.
type Options struct {
	Provider provider.Provider
	// Scrubber already holds the resident's environment secrets; Serve adds
	// the host's credentials and the provider's token patterns.
	Scrubber *hardening.Scrubber
	Logger   *zap.Logger
	Limits   protocol.Limits
	// Version is the resident's own version string.
	Version string
	// GracePeriod bounds how long in-flight work may take to stop on
	// shutdown, stdin EOF or expiry before Serve returns anyway.
	GracePeriod time.Duration
	// Notifier, when set, is bound to this session for provider notifications.
	Notifier *Notifier
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// WatchInterval is how often a session under sandbox/watch lists its
	// owned sandboxes; 0 means DefaultWatchInterval.
	WatchInterval time.Duration
}

// DefaultLimits are the bounds announced in initialize unless overridden.
func DefaultLimits() protocol.Limits {
	return protocol.Limits{
		MaxFrameBytes:         protocol.DefaultMaxFrameBytes,
		OutputCapBytes:        64 << 20,
		DefaultExecTimeoutS:   3600,
		MaxExecTimeoutS:       24 * 3600,
		MaxFileBytes:          8 << 20,
		MaxConcurrentExecs:    256,
		MaxListDirEntries:     10000,
		DefaultListDirEntries: 1000,
		CredentialsExpiryExit: 5,
		MaxPathBytes:          maxPathBytes,
		MaxHeldRequestBytes:   64 << 20,
	}
}

func (o *Options) fill() {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Scrubber == nil {
		o.Scrubber = hardening.New()
	}
	if o.Limits == (protocol.Limits{}) {
		o.Limits = DefaultLimits()
	}
	o.Limits.MaxPathBytes = maxPathBytes // fixed, so always announced as enforced
	// The budget must fit a largest frame while requests that wait on a
	// process hold the rest, or such a frame could never be read.
	if o.Limits.MaxHeldRequestBytes < 2*int64(o.Limits.MaxFrameBytes) {
		o.Limits.MaxHeldRequestBytes = max(DefaultLimits().MaxHeldRequestBytes, 2*int64(o.Limits.MaxFrameBytes))
	}
	if o.GracePeriod <= 0 {
		o.GracePeriod = 1500 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.WatchInterval <= 0 {
		o.WatchInterval = DefaultWatchInterval
	}
	if o.Version == "" {
		o.Version = "dev"
	}
}
