package providertest

import (
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// runUnannounced: an exec user, a terminal or a spec.user the provider
// does not announce is refused by name, never ignored (a command run as
// the wrong user in silence is worse than no command).
func runUnannounced(t *testing.T, h Harness) {
	e := newEnv(t, h)
	c := e.p.Info().Capabilities
	if c.ExecUser && c.TTY {
		t.Skip("provider announces exec_user and tty")
	}
	id := e.create(protocol.Spec{}, nil)
	if !c.ExecUser {
		_, err := e.p.Exec(ctx(t), id, provider.ExecRequest{Argv: []string{"true"}, User: "65534"})
		wantNamed(t, "exec with a user", err, "exec_user")
		_, err = e.p.Create(ctx(t), protocol.Spec{Image: h.Image, User: "65534"}, e.owner, nil)
		wantNamed(t, "create with spec.user", err, "exec_user")
	}
	if !c.TTY {
		_, err := e.p.Exec(ctx(t), id, provider.ExecRequest{Argv: []string{"true"}, TTY: &protocol.WindowSize{Rows: 24, Cols: 80}})
		wantNamed(t, "exec with a tty", err, "tty")
	}
}

func wantNamed(t *testing.T, what string, err error, capability string) {
	t.Helper()
	wantKind(t, what, err, protocol.KindInvalidRequest)
	if !strings.Contains(err.Error(), "capabilities."+capability) {
		t.Fatalf("%s: %q does not name capabilities.%s", what, err, capability)
	}
}
