package keeperexec

import (
	"cmp"
	"errors"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Spec is req as the keeper runs it, given what the provider resolved:
// the whole environment, the working directory as the sandbox sees it,
// and the sandbox's user (spec.user) for a request that names none. The
// keeper resolves the user in the sandbox's /etc/passwd and argv[0] and
// cwd inside the sandbox.
func Spec(req provider.ExecRequest, env []string, cwd, sandboxUser string) channel.ExecSpec {
	spec := channel.ExecSpec{
		Argv:      req.Argv,
		Env:       env,
		Cwd:       cwd,
		User:      cmp.Or(req.User, sandboxUser),
		Stdin:     req.Stdin,
		Exclusive: req.Exclusive,
	}
	if req.TTY != nil {
		spec.TTY = &channel.WindowSize{Rows: req.TTY.Rows, Cols: req.TTY.Cols}
	}
	return spec
}

// StartError maps why the keeper did not start an exec to the protocol's
// kinds and reasons (no_such_file, permission_denied, ... with the field
// they are about); a broken channel is transient. A provider checks its
// own causes first (a full pids limit is quota).
func StartError(err error) error {
	var se *channel.StartError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		if reason := protocol.Reason(se.Reason); reason.Known() {
			return protocol.ReasonError(reason, se.Field, se.Error(), nil)
		}
		kind := protocol.Kind(se.Kind)
		if !kind.Known() {
			kind = protocol.KindInvalidRequest
		}
		return &protocol.Error{Kind: kind, Msg: se.Error()}
	case errors.Is(err, channel.ErrBroken):
		return &protocol.Error{Kind: protocol.KindTransient, Msg: "exec: the sandbox's channel broke", Err: err}
	}
	return err
}

// ErrUnprotectedExclusive refuses an exclusive exec where the keeper runs
// unprotected (not started as root): without its own uid and marks it
// cannot find every process of the sandbox.
var ErrUnprotectedExclusive = protocol.Errorf(protocol.KindInvalidRequest, "exec exclusive: the sandbox's keeper runs unprotected here (not started as root), so it cannot stop every other process of the sandbox")
