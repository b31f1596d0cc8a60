package docker

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/resident-dev/resident/hardening"
)

func TestSecretsPolicy(t *testing.T) {
	p := &Provider{}
	pol := p.Secrets()
	for _, name := range []string{"DOCKER_AUTH_CONFIG", "DOCKER_PASSWORD", "DOCKER_TOKEN", "REGISTRY_AUTH", "REGISTRY_PASSWORD", "CI_REGISTRY_PASSWORD"} {
		if !slices.ContainsFunc(pol.EnvPrefixes, func(pre string) bool { return strings.HasPrefix(name, pre) }) {
			t.Errorf("%s is not covered by a secret prefix", name)
		}
	}
	for _, name := range []string{"DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_API_VERSION", "DOCKER_CERT_PATH"} {
		if slices.ContainsFunc(pol.EnvPrefixes, func(pre string) bool { return strings.HasPrefix(name, pre) }) {
			t.Errorf("%s (not a secret) would be scrubbed", name)
		}
	}

	s := hardening.New(pol.Tokens...)
	config := `{"auths":{"registry.example.com":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("bob:hunter2-password")) + `"}}}`
	pretty := "{\n  \"auths\": {\n    \"r.example\": {\n      \"auth\": \"Ym9iOnNlY3JldA==\"\n    }\n  }\n}"
	header := base64.URLEncoding.EncodeToString([]byte(`{"username":"bob","password":"hunter2-password"}`))
	secrets := map[string]string{
		"docker hub PAT":         "token dckr_pat_2b3e36beeb386dfdaacb9b46004ccb7c ok",
		"docker org token":       "dckr_oat_7awgM4jG5SQvxcvmNzhKj8PQjxo",
		"base64 docker config":   "DOCKER_AUTH_CONFIG=" + base64.StdEncoding.EncodeToString([]byte(config)),
		"base64 pretty config":   base64.StdEncoding.EncodeToString([]byte(pretty)),
		"X-Registry-Auth header": "X-Registry-Auth: " + header,
		"config JSON auth field": config,
		"identity token":         `{"identitytoken": "eyJhbGciOiJSUzI1NiJ9.abc.def"}`,
	}
	for name, text := range secrets {
		got := s.ScrubString(text)
		if !strings.Contains(got, hardening.Mask) {
			t.Errorf("%s: not scrubbed: %q", name, got)
		}
		for _, leak := range []string{"2b3e36beeb386dfdaacb9b46004ccb7c", "7awgM4jG5SQvxcvmNzhKj8PQjxo", "Ym9iOmh1bnRlcjI", "Ym9iOnNlY3JldA", "eyJ1c2VybmFtZSI6", "abc.def"} {
			if strings.Contains(got, leak) {
				t.Errorf("%s: %q survives in %q", name, leak, got)
			}
		}
	}
	for _, innocent := range []string{"docker pull busybox", `{"author":"x"}`, "auth required", "eyJhbGciOi is a JWT header"} {
		if got := s.ScrubString(innocent); got != innocent {
			t.Errorf("innocent %q scrubbed to %q", innocent, got)
		}
	}
}
