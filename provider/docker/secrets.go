package docker

import (
	"regexp"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/provider"
)

// secretEnvPrefixes name the Docker and registry credential variables a
// user may have in the resident's environment. They are precise on purpose:
// a broad "DOCKER_" would scrub DOCKER_HOST and DOCKER_TLS_VERIFY=1 from
// every output (a "1" redacted everywhere).
var secretEnvPrefixes = []string{
	"DOCKER_AUTH_CONFIG", "DOCKER_PASSWORD", "DOCKER_PASS", "DOCKER_TOKEN", "DOCKER_PAT",
	"DOCKERHUB_PASSWORD", "DOCKERHUB_TOKEN", "DOCKER_HUB_PASSWORD", "DOCKER_HUB_TOKEN",
	"REGISTRY_AUTH", "REGISTRY_PASSWORD", "REGISTRY_TOKEN",
	"CI_REGISTRY_PASSWORD", "CI_JOB_TOKEN", // GitLab's registry credentials
}

// tokenPatterns catch registry auth material wherever it shows up in
// output, whether or not it came from the resident's environment.
var tokenPatterns = []hardening.TokenPattern{
	{
		// Docker Hub personal and organisation access tokens.
		Name:     "docker-access-token",
		Prefixes: []string{"dckr_pat_", "dckr_oat_"},
		Regexp:   regexp.MustCompile(`dckr_(?:pat|oat)_[A-Za-z0-9_-]{16,100}`),
		MaxLen:   110,
	},
	{
		// A whole Docker config ({"auths": ...}, as in DOCKER_AUTH_CONFIG)
		// base64-encoded, compact or pretty-printed; and an encoded
		// X-Registry-Auth header ({"username": ... / {"identitytoken": ...}).
		Name: "docker-config-base64",
		Prefixes: []string{
			"eyJhdXRocyI6", "eyAiYXV0aHMiOi", "ewogICJhdXRocyI6", "ewoJImF1dGhzIjo", "ewogICAgImF1dGhzIjo",
			"eyJ1c2VybmFtZSI6", "eyJpZGVudGl0eXRva2VuIjo", "eyJwYXNzd29yZCI6",
		},
		Regexp: regexp.MustCompile(`(?:eyJhdXRocyI6|eyAiYXV0aHMiOi|ewogICJhdXRocyI6|ewoJImF1dGhzIjo|ewogICAgImF1dGhzIjo|eyJ1c2VybmFtZSI6|eyJpZGVudGl0eXRva2VuIjo|eyJwYXNzd29yZCI6)[A-Za-z0-9+/_-]*={0,2}`),
		MaxLen: 16 << 10,
	},
	{
		// The secret fields of a Docker config in plain JSON.
		Name:     "docker-config-auth",
		Prefixes: []string{`"auth"`, `"identitytoken"`, `"registrytoken"`},
		Regexp:   regexp.MustCompile(`"(?:auth|identitytoken|registrytoken)"\s*:\s*"[^"\\\s]{4,}"`),
		MaxLen:   4096,
	},
}

// Secrets is what the scrubber must remove for this provider.
func (p *Provider) Secrets() provider.SecretPolicy {
	return provider.SecretPolicy{EnvPrefixes: secretEnvPrefixes, Tokens: tokenPatterns}
}
