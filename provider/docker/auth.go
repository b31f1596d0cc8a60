package docker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
)

// CredentialDockerConfig is the credentials key (initialize.credentials)
// the docker provider reads: a Docker config JSON, as in
// ~/.docker/config.json or $DOCKER_AUTH_CONFIG, whose "auths" give registry
// credentials for pulls. Other keys are ignored; the engine's own access is
// configured by DOCKER_HOST and TLS files, not by credentials.
const CredentialDockerConfig = "docker_auth_config"

// registryAuth is the parsed "auths" of a Docker config, by registry host.
type registryAuth map[string]registry.AuthConfig

// ApplyAuth takes registry credentials for image pulls, then pings the
// engine (negotiating the API version), so initialize fails at once, as
// transient, when no engine answers, instead of the host meeting that on
// its first call. Bad credentials are refused before the engine is asked.
// It is the provider's start: once the engine answers, it starts the sweep
// of what dead residents left (sweep.go) in the background.
func (p *Provider) ApplyAuth(ctx context.Context, creds map[string]string) error {
	if err := p.applyRegistryAuth(creds); err != nil {
		return err
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	ping, err := p.cli.Ping(cctx, client.PingOptions{NegotiateAPIVersion: true})
	if err != nil {
		return classify(cctx, "docker engine at "+p.cli.DaemonHost(), err)
	}
	p.log.Info("engine answered", zap.String("host", p.cli.DaemonHost()), zap.String("api_version", p.cli.ClientVersion()), zap.String("engine_api_version", ping.APIVersion), zap.String("os", ping.OSType))
	p.startSweep()
	return nil
}

func (p *Provider) applyRegistryAuth(creds map[string]string) error {
	raw, ok := creds[CredentialDockerConfig]
	if !ok {
		return nil
	}
	var cfg struct {
		Auths map[string]registry.AuthConfig `json:"auths"`
	}
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		// Never echo the value: it is a secret.
		return protocol.Errorf(protocol.KindInvalidRequest, "credentials %q: not a Docker config JSON", CredentialDockerConfig)
	}
	auths := registryAuth{}
	for host, ac := range cfg.Auths {
		if ac.Auth != "" && ac.Username == "" {
			if dec, err := base64.StdEncoding.DecodeString(ac.Auth); err == nil {
				ac.Username, ac.Password, _ = strings.Cut(string(dec), ":")
			}
		}
		ac.Auth = ""
		ac.ServerAddress = host
		auths[normalizeRegistry(host)] = ac
	}
	p.registry.Store(&auths)
	return nil
}

// CredentialSecrets names what a Docker config holds besides its JSON
// fields: each "auth" is base64 of "user:password", so its decoded text and
// the password are secrets on their own (a registry error may echo either).
func (p *Provider) CredentialSecrets(key, value string) []string {
	if key != CredentialDockerConfig {
		return nil
	}
	var cfg struct {
		Auths map[string]struct {
			Auth string `json:"auth"`
		} `json:"auths"`
	}
	if json.Unmarshal([]byte(value), &cfg) != nil {
		return nil
	}
	var parts []string
	for _, ac := range cfg.Auths {
		dec, err := base64.StdEncoding.DecodeString(ac.Auth)
		if ac.Auth == "" || err != nil {
			continue
		}
		parts = append(parts, string(dec))
		if _, pass, ok := strings.Cut(string(dec), ":"); ok {
			parts = append(parts, pass)
		}
	}
	return parts
}

// registryAuthFor is the X-Registry-Auth value for a registry domain, or ""
// for an anonymous pull.
func (p *Provider) registryAuthFor(domain string) string {
	auths := p.registry.Load()
	if auths == nil {
		return ""
	}
	ac, ok := (*auths)[normalizeRegistry(domain)]
	if !ok {
		return ""
	}
	// The header is base64url of the JSON AuthConfig, as the engine reads it.
	buf, err := json.Marshal(ac)
	if err != nil {
		return ""
	}
	return base64.URLEncoding.EncodeToString(buf)
}

// normalizeRegistry folds the spellings Docker configs use for one
// registry ("https://index.docker.io/v1/", "docker.io", "host:5000/").
func normalizeRegistry(host string) string {
	host = strings.TrimPrefix(strings.TrimPrefix(host, "https://"), "http://")
	host, _, _ = strings.Cut(host, "/")
	switch host {
	case "index.docker.io", "registry-1.docker.io", "docker.io":
		return "docker.io"
	}
	return host
}
