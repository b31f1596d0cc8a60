package docker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/registry"

	"github.com/resident-dev/resident/protocol"
)

func TestApplyAuthPicksTheRegistry(t *testing.T) {
	p := &Provider{}
	cfg := `{"auths":{"https://index.docker.io/v1/":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("hub-user:hub-pass")) + `"},
		"registry.example.com:5000":{"username":"u","password":"p"},
		"ghcr.io":{"identitytoken":"tok"}}}`
	if err := p.ApplyAuth(context.Background(), map[string]string{CredentialDockerConfig: cfg, "unrelated": "x"}); err != nil {
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
