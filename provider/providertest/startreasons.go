package providertest

import (
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// runStartReasons: an exec that cannot start says why, as a shell's 127
// and 126 do: a missing program, a file that cannot be executed and a
// working directory that is missing or a file are each their own reason,
// about their own param.
func runStartReasons(t *testing.T, h Harness) {
	e := newEnv(t, h)
	id := e.create(protocol.Spec{}, nil)
	e.sh(id, "/", "mkdir -p sr && printf 'echo hi\\n' > sr/plain.sh && chmod 644 sr/plain.sh && printf x > sr/file")
	for _, c := range []struct {
		name   string
		req    provider.ExecRequest
		reason protocol.Reason
		field  string
	}{
		{"missing_program_on_path", provider.ExecRequest{Argv: []string{"no-such-command-xyz"}}, protocol.ReasonNoSuchFile, protocol.FieldArgv},
		{"missing_program_by_path", provider.ExecRequest{Argv: []string{"./sr/none.sh"}, Cwd: "/"}, protocol.ReasonNoSuchFile, protocol.FieldArgv},
		{"not_executable", provider.ExecRequest{Argv: []string{"./sr/plain.sh"}, Cwd: "/"}, protocol.ReasonPermissionDenied, protocol.FieldArgv},
		{"missing_cwd", provider.ExecRequest{Argv: []string{"true"}, Cwd: "/no/such/dir"}, protocol.ReasonNoSuchFile, protocol.FieldCwd},
		{"cwd_is_a_file", provider.ExecRequest{Argv: []string{"true"}, Cwd: "/sr/file"}, protocol.ReasonNotDirectory, protocol.FieldCwd},
	} {
		t.Run(c.name, func(t *testing.T) {
			proc, err := e.p.Exec(ctx(t), id, c.req)
			if err == nil {
				r := &running{proc: proc}
				r.readers.Add(2)
				go func() { defer r.readers.Done(); drain(proc.Stdout()) }()
				go func() { defer r.readers.Done(); drain(proc.Stderr()) }()
				t.Fatalf("exec started (exit %d); want a start error with reason %s", r.wait(t).Code, c.reason)
			}
			wantReason(t, c.name, err, c.reason)
			if _, field := protocol.ReasonOf(err); field != c.field {
				t.Fatalf("%s: reason about %q, want %q (%v)", c.name, field, c.field, err)
			}
		})
	}
}
