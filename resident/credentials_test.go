package resident

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/protocol"
)

// A structured credential (a Docker config JSON) is one value, but a
// registry error or a tool may echo one part of it: an identity token, the
// password inside a base64 "auth". Each secret-looking JSON field is masked
// on its own; ordinary fields (a username, an email) are not; and what
// only the provider can read in its format (the decoded "auth") is masked
// because the provider names it (provider.CredentialSecrets), never because
// the resident knows Docker's.
func TestStructuredCredentialFieldsAreSecrets(t *testing.T) {
	const pass, token = "reg-pass-7c1d9e2f", "idtok-51b8a6e3c0"
	auth := base64.StdEncoding.EncodeToString([]byte("robot-user:" + pass))
	cfg := `{"auths":{"registry.example":{"auth":"` + auth + `","identitytoken":"` + token + `","email":"ops@example.com"}}}`
	argv := []string{"echo", "p=" + pass, "t=" + token, "a=" + auth, "u=robot-user", "m=ops@example.com"}
	run := func(t *testing.T, h *host) string {
		h.initialize(map[string]any{"credentials": map[string]string{"docker_auth_config": cfg}})
		box := newBox(t, h)
		h.call(protocol.MethodSandboxExec, execParams(box, "e", argv...), nil)
		return h.output("e", "stdout")
	}

	t.Run("the provider names the decoded parts", func(t *testing.T) {
		h := startHost(t, &decodingFake{newFake(), map[string][]string{"docker_auth_config": {"robot-user:" + pass, pass}}})
		got := run(t, h)
		want := "p=" + hardening.Mask + " t=" + hardening.Mask + " a=" + hardening.Mask + " u=robot-user m=ops@example.com"
		if got != want {
			t.Fatalf("got %q\nwant %q", got, want)
		}
		if strings.Contains(h.logs.String(), pass) {
			t.Fatal("the password reached the logs")
		}
	})
	t.Run("the resident decodes no provider's format", func(t *testing.T) {
		got := run(t, startHost(t, newFake()))
		want := "p=" + pass + " t=" + hardening.Mask + " a=" + hardening.Mask + " u=robot-user m=ops@example.com"
		if got != want {
			t.Fatalf("got %q\nwant %q", got, want)
		}
	})
}

// decodingFake is a provider that finds secrets inside credentials.
type decodingFake struct {
	*fakeProvider
	parts map[string][]string
}

func (d *decodingFake) CredentialSecrets(key, _ string) []string { return d.parts[key] }
