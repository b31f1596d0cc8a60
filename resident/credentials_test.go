package resident

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/protocol"
)

// A structured credential (a Docker config JSON) is one value, but a
// registry error or a tool may echo one field of it: the password inside
// the base64 "auth", an identity token. Each secret field is masked on its
// own; ordinary fields (a username, an email) are not.
func TestStructuredCredentialFieldsAreSecrets(t *testing.T) {
	const pass, token = "reg-pass-7c1d9e2f", "idtok-51b8a6e3c0"
	auth := base64.StdEncoding.EncodeToString([]byte("robot-user:" + pass))
	cfg := `{"auths":{"registry.example":{"auth":"` + auth + `","identitytoken":"` + token + `","email":"ops@example.com"}}}`
	h := startHost(t, newFake())
	h.initialize(map[string]any{"credentials": map[string]string{"docker_auth_config": cfg}})
	box := newBox(t, h)
	h.call(protocol.MethodSandboxExec, execParams(box, "e", "echo", "p="+pass, "t="+token, "a="+auth, "u=robot-user", "m=ops@example.com"), nil)
	got := h.output("e", "stdout")
	want := "p=" + hardening.Mask + " t=" + hardening.Mask + " a=" + hardening.Mask + " u=robot-user m=ops@example.com"
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if strings.Contains(h.logs.String(), pass) {
		t.Fatal("the password reached the logs")
	}
}
