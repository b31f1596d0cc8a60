package keeper

import (
	"errors"
	"testing"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
)

// The keeper's status line: anything that is not one of its two words is a
// stream that cannot be trusted, or a keeper killed before it spoke.
func TestAnUnexpectedStatusLineIsTransient(t *testing.T) {
	cases := map[string]protocol.Kind{
		"":                                     protocol.KindTransient,
		keeperproto.StatusPrefix + "maybe 3\n": protocol.KindTransient,
		keeperproto.StatusPrefix + "err not_found no such dir\n": protocol.KindNotFound,
	}
	for line, want := range cases {
		if _, err := ParseStatus([]byte(line)); protocol.KindOf(err) != want {
			t.Errorf("ParseStatus(%q) = %v, want kind %s", line, err, want)
		}
	}
	if st, err := ParseStatus([]byte(keeperproto.StatusPrefix + "ok 4\n")); err != nil || st.OOMKills != 4 {
		t.Errorf("ok line: %+v %v", st, err)
	}
}

// What the keeper or the runtime says at an exec's start never comes out
// internal: a kind the keeper names outside the closed set is transient,
// and the runtime's own text instead of a status (it would not start the
// keeper) is a refusal that Exec explains from the sandbox's state.
func TestExecStatusKinds(t *testing.T) {
	cases := map[string]protocol.Kind{
		keeperproto.StatusPrefix + "err not_found no such cwd\n":    protocol.KindNotFound,
		keeperproto.StatusPrefix + "err rate_limited slow down\n":   protocol.KindTransient,
		"OCI runtime exec failed: cannot exec in a stopped state\n": protocol.KindTransient,
		"": protocol.KindTransient,
	}
	for line, want := range cases {
		_, err := ParseStatus([]byte(line))
		if got := protocol.KindOf(err); got != want {
			t.Errorf("status %q: %v, kind %s; want %s", line, err, got, want)
		}
	}
	if _, err := ParseStatus([]byte("cannot exec in a stopped state\n")); !errors.Is(err, ErrRuntimeRefused) {
		t.Errorf("the runtime's text is not marked as a refusal: %v", err)
	}
}
