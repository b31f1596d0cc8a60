package docker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

func TestApplyAuthPicksTheRegistry(t *testing.T) {
	p := &Provider{}
	cfg := `{"auths":{"https://index.docker.io/v1/":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("hub-user:hub-pass")) + `"},
		"registry.example.com:5000":{"username":"u","password":"p"},
		"ghcr.io":{"identitytoken":"tok"}}}`
	if err := p.applyRegistryAuth(map[string]string{CredentialDockerConfig: cfg, "unrelated": "x"}); err != nil {
		t.Fatal(err)
	}
	decode := func(domain string) registry.AuthConfig {
		var ac registry.AuthConfig
		if raw := p.registryAuthFor(domain); raw != "" {
			b, err := base64.URLEncoding.DecodeString(raw)
			if err != nil || json.Unmarshal(b, &ac) != nil {
				t.Fatalf("%s: bad header %q", domain, raw)
			}
		}
		return ac
	}
	if ac := decode("docker.io"); ac.Username != "hub-user" || ac.Password != "hub-pass" {
		t.Errorf("docker.io: %+v", ac)
	}
	if ac := decode("registry.example.com:5000"); ac.Username != "u" || ac.Password != "p" {
		t.Errorf("example: %+v", ac)
	}
	if ac := decode("ghcr.io"); ac.IdentityToken != "tok" {
		t.Errorf("ghcr: %+v", ac)
	}
	if p.registryAuthFor("quay.io") != "" {
		t.Error("credentials sent to a registry they are not for")
	}
	err := p.ApplyAuth(context.Background(), map[string]string{CredentialDockerConfig: "not json secret-value-123"})
	if protocol.KindOf(err) != protocol.KindInvalidRequest || strings.Contains(err.Error(), "secret-value-123") {
		t.Fatalf("bad config: %v", err)
	}
}

// A dead engine fails initialize at once, as transient, naming where it
// looked; bad credentials are refused before the engine is asked at all.
func TestApplyAuthPingsTheEngine(t *testing.T) {
	sock := "unix://" + t.TempDir() + "/no-engine.sock"
	p, err := newProvider(provider.Config{}, client.WithHost(sock))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	err = p.ApplyAuth(context.Background(), nil)
	if protocol.KindOf(err) != protocol.KindTransient || !strings.Contains(err.Error(), sock) {
		t.Fatalf("no engine: got %v, want transient naming %s", err, sock)
	}
	err = p.ApplyAuth(context.Background(), map[string]string{CredentialDockerConfig: "{"})
	if protocol.KindOf(err) != protocol.KindInvalidRequest {
		t.Fatalf("bad credentials with no engine: got %v, want invalid_request", err)
	}

	needEngine(t)
	live, err := newProvider(provider.Config{}, client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := live.ApplyAuth(context.Background(), nil); err != nil {
		t.Fatalf("live engine: %v", err)
	}
}

// The Docker config's base64 "auth" is this provider's format: it names
// the decoded "user:password" and the password, so the resident's scrubber
// masks either when a registry echoes it, without knowing the format.
func TestCredentialSecretsOfADockerConfig(t *testing.T) {
	p := &Provider{}
	auth := base64.StdEncoding.EncodeToString([]byte("hub-user:hub-pass-81c2"))
	cfg := `{"auths":{"docker.io":{"auth":"` + auth + `"},"r.example":{"auth":"not base64!"},"s.example":{"username":"u","password":"p"}}}`
	got := p.CredentialSecrets(CredentialDockerConfig, cfg)
	if len(got) != 2 || got[0] != "hub-user:hub-pass-81c2" || got[1] != "hub-pass-81c2" {
		t.Fatalf("CredentialSecrets = %q", got)
	}
	if got := p.CredentialSecrets("other_key", cfg); got != nil {
		t.Fatalf("another key's value: %q", got)
	}
	if got := p.CredentialSecrets(CredentialDockerConfig, "{not json"); got != nil {
		t.Fatalf("not JSON: %q", got)
	}
}
