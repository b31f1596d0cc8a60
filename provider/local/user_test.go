package local_test

import (
	"context"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Users and terminals are the keeper's: it resolves a user in the
// sandbox's own /etc/passwd, drops every capability, and allocates a pty.

func TestExecAsUser(t *testing.T) {
	state := t.TempDir()
	p, id := isolatedIn(t, state, protocol.Spec{})
	if c := p.Info().Capabilities; !c.ExecUser || !c.TTY {
		t.Fatalf("capabilities exec_user %v tty %v under bubblewrap", c.ExecUser, c.TTY)
	}
	for _, user := range []string{"nobody", "65534", "65534:65534"} {
		r := start(t, p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "id -u; id -g; grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status | tr -s '\\t' ' '"}, User: user})
		st := r.wait(t)
		want := "65534\n65534\nCapPrm: 0000000000000000\nCapEff: 0000000000000000\nCapBnd: 0000000000000000\nNoNewPrivs: 1\n"
		if st.Code != 0 || r.out() != want {
			t.Errorf("user %q: exit %d, %q; want %q", user, st.Code, r.out(), want)
		}
	}
	_, err := p.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"true"}, User: "no-such-user"})
	if protocol.KindOf(err) != protocol.KindInvalidRequest {
		t.Errorf("unknown user: %v; want invalid_request", err)
	}
}

// TestSpecUserRunsAndWrites: spec.user is the sandbox's default user, for
// execs and for write_file alike.
func TestSpecUserRunsAndWrites(t *testing.T) {
	state := t.TempDir()
	pv, id := isolatedIn(t, state, protocol.Spec{User: "nobody"})
	p := pv.(provider.FileWriter)
	must(t, p.WriteFile(context.Background(), id, "/tmp/by-nobody", []byte("x"), nil))
	if out, code := sh(t, pv, id, "", "id -un; stat -c %u /tmp/by-nobody"); code != 0 || out != "nobody\n65534\n" {
		t.Errorf("spec.user nobody: exit %d, %q", code, out)
	}
	if err := p.WriteFile(context.Background(), id, "/not-nobodys", []byte("x"), nil); protocol.KindOf(err) != protocol.KindInvalidRequest {
		t.Errorf("write_file as nobody into root's /: %v; want refused", err)
	}
}

func TestTerminalAndResize(t *testing.T) {
	state := t.TempDir()
	p, id := isolatedIn(t, state, protocol.Spec{})
	r := start(t, p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "stty size; tty; read line; stty size"}, TTY: &protocol.WindowSize{Rows: 24, Cols: 80}, Stdin: true})
	await(t, func() bool { return strings.Contains(r.out(), "/dev/pts/") })
	if !strings.HasPrefix(r.out(), "24 80\r\n") {
		t.Errorf("terminal size: %q", r.out())
	}
	rs, ok := r.proc.(provider.Resizer)
	if !ok {
		t.Fatal("a terminal exec is no Resizer")
	}
	must(t, rs.Resize(protocol.WindowSize{Rows: 40, Cols: 100}))
	_, err := r.proc.Stdin().Write([]byte("go\n"))
	must(t, err)
	if st := r.wait(t); st.Code != 0 || !strings.HasSuffix(r.out(), "40 100\r\n") {
		t.Errorf("after resize: exit %d, %q", st.Code, r.out())
	}
}
