package keeper

import (
	"errors"
	"strconv"
	"strings"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
)

// ErrRuntimeRefused marks an exec the container runtime would not start:
// what came back is the runtime's error text, not the keeper's status.
var ErrRuntimeRefused = errors.New("the container runtime refused the exec")

// Status is the keeper's first line of a run: the command is starting.
type Status struct {
	// OOMKills is the sandbox's OOM-kill counter before the command, or
	// -1 when the keeper could not read it.
	OOMKills int64
}

// ParseStatus reads "<prefix>ok <oom>" or "<prefix>err <kind> <message>",
// the line the keeper writes before any output; a keeper error keeps its
// protocol kind.
func ParseStatus(line []byte) (Status, error) {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(string(line), "\n"), keeperproto.StatusPrefix)
	if len(line) == 0 {
		// The keeper ended without a word: killed before it could protect
		// itself (a process of the sandbox can, in that first instant).
		return Status{}, protocol.Errorf(protocol.KindTransient, "exec: the sandbox helper ended before the command started")
	}
	if !ok {
		// Not the keeper talking: the runtime could not start it at all
		// (the sandbox stopped under the exec, or its volume is gone).
		return Status{}, protocol.Errorf(protocol.KindTransient, "sandbox helper did not start: %w: %s",
			ErrRuntimeRefused, strings.TrimSpace(strings.ToValidUTF8(string(line), "?")))
	}
	word, rest, _ := strings.Cut(rest, " ")
	switch word {
	case "ok":
		n, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
		if err != nil {
			n = -1
		}
		return Status{OOMKills: n}, nil
	case "err":
		kind, msg, _ := strings.Cut(rest, " ")
		kind, why, _ := strings.Cut(kind, "/")
		reason, field, _ := strings.Cut(why, "/")
		if r := protocol.Reason(reason); r.Known() {
			return Status{}, protocol.ReasonError(r, field, msg, nil)
		}
		return Status{}, protocol.Errorf(protocol.Kind(kind), "%s", msg)
	}
	// A keeper line that says neither: the stream is not what the keeper
	// wrote. Transient like a corrupted stream; the caller drops the
	// connection, so the keeper kills whatever it started.
	return Status{}, protocol.Errorf(protocol.KindTransient, "exec stream corrupted: bad keeper status %q", rest)
}
