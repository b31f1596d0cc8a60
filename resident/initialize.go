package resident

import (
	"context"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// DefaultTagPrefix names the owner tag when the host gives no prefix.
const DefaultTagPrefix = "resident"

func initialize(ctx context.Context, s *session, c *call, p *protocol.InitializeParams) (*protocol.InitializeResult, error) {
	if !s.state.CompareAndSwap(int32(stateNew), int32(stateInitializing)) {
		return nil, &protocol.Error{Kind: protocol.KindInvalidRequest, Code: protocol.CodeInvalidRequest, Msg: "initialize was already called"}
	}
	if at := p.CredentialsExpireAt; at != nil && !at.After(s.opts.Now()) {
		s.registerCredentials(p.Credentials)
		c.afterReply = func() { s.expire("credentials_expire_at " + at.UTC().Format(time.RFC3339) + " has passed") }
		return nil, protocol.Errorf(protocol.KindUnauthorized, "credentials_expire_at %s has already passed", at.UTC().Format(time.RFC3339))
	}
	result, err := s.initialize(ctx, p)
	if err != nil {
		s.state.Store(int32(stateNew)) // a refused initialize may be retried
		return nil, err
	}
	s.state.Store(int32(stateReady))
	return result, nil
}

func (s *session) initialize(ctx context.Context, p *protocol.InitializeParams) (*protocol.InitializeResult, error) {
	// Credentials become secrets before anything can echo them, even an
	// error about the other fields.
	s.registerCredentials(p.Credentials)
	if p.ProtocolVersion != protocol.Version {
		return nil, protocol.Errorf(protocol.KindInvalidRequest, "protocol_version %d is not supported; this resident speaks %d", p.ProtocolVersion, protocol.Version)
	}
	if err := checkInstallID(p.InstallID); err != nil {
		return nil, err
	}
	prefix := p.TagPrefix
	if prefix == "" {
		prefix = DefaultTagPrefix
	}
	if err := checkTagPrefix(prefix); err != nil {
		return nil, err
	}
	s.owner = provider.Owner{Key: prefix + "-install-id", InstallID: p.InstallID}
	// A provider that writes one fixed owner key (the original shims) owns
	// by that key, whatever the prefix: the resident's checks must match
	// what it writes. initialize's owner_tag tells the host.
	if fixed, ok := s.prov.(provider.FixedOwnerKey); ok && fixed.OwnerKey() != "" {
		s.owner.Key = fixed.OwnerKey()
	}

	s.prov.OnUnauthorized(s.expire)
	if err := s.prov.ApplyAuth(ctx, p.Credentials); err != nil {
		return nil, err
	}
	if p.CredentialsExpireAt != nil {
		s.armExpiry(*p.CredentialsExpireAt)
	}
	info := s.prov.Info()
	limits := s.opts.Limits
	limits.CallTimeoutS = int64(info.CallTimeout.Round(time.Second) / time.Second)
	caps := info.Capabilities
	caps.Store = s.store != nil
	caps.WriteFile = s.writer != nil
	caps.Detach = s.detach != nil
	if caps.Detach {
		limits.DetachedBufferBytes = info.DetachedBufferBytes
	}
	caps.CredentialExpiry = true
	caps.SandboxFiles = s.files != nil
	caps.Upload = s.streamer != nil
	caps.VolumeAdmin = s.volumes != nil
	caps.Watch = true
	s.log.Info("initialized", zap.String("install_id", p.InstallID), zap.String("owner_tag", s.owner.Key),
		zap.Int("credentials", len(p.Credentials)), zap.Bool("expires", p.CredentialsExpireAt != nil))
	return &protocol.InitializeResult{
		ResidentVersion: s.opts.Version,
		ProtocolVersion: protocol.Version,
		Provider:        protocol.ProviderInfo{Name: info.Name, Version: info.Version},
		Capabilities:    caps,
		Limits:          limits,
		ErrorKinds:      protocol.Kinds,
		OwnerTag:        s.owner.Key,
	}, nil
}

// registerCredentials adds every credential value to the scrubber. A value
// too short or blank to scrub safely is refused by the scrubber; the warning
// names the key, never the value.
func (s *session) registerCredentials(creds map[string]string) {
	keys := make([]string, 0, len(creds))
	for k := range creds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !s.scrub.AddSecret(creds[k]) {
			s.log.Warn("credential value too short or blank to scrub; it is not treated as a secret", zap.String("key", k))
		}
		for _, part := range credentialParts(s.prov, k, creds[k]) {
			if !s.scrub.AddSecret(part) {
				s.log.Warn("a field of a structured credential is too short or blank to scrub; it is not treated as a secret", zap.String("key", k))
			}
		}
	}
}

// armExpiry schedules the expired path.
func (s *session) armExpiry(at time.Time) {
	wait := at.Sub(s.opts.Now())
	s.mu.Lock()
	s.expiryTimer = time.AfterFunc(wait, func() { s.expire("credentials_expire_at has passed") })
	s.mu.Unlock()
}

func shutdownRequest(_ context.Context, s *session, c *call, _ *struct{}) (protocol.Empty, error) {
	c.afterReply = s.shutdown
	return protocol.Empty{}, nil
}

func (s *session) disarmExpiry() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.expiryTimer != nil {
		s.expiryTimer.Stop()
	}
}
