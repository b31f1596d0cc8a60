package channel

import (
	"errors"
	"fmt"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// ErrBroken is a channel that no longer works: the transport failed, the
// keeper went away, or the Conn was closed. Every exec and call open on it
// fails with an error that is ErrBroken; the next exec needs a new Conn.
var ErrBroken = errors.New("keeper channel broken")

// NotSent says err is a request that never reached the keeper: the
// channel was already broken, or it broke on the request's first byte.
// Nothing ran, so the caller may send it again on a new Conn; a request
// that may have gone out (any later failure) must not be retried. It is
// about the frame that failed: Exec's answer means its one request frame;
// an operation that sends more frames (an upload's data) may have sent
// its request before, so only Exec's callers read it.
func NotSent(err error) bool {
	var ns notSentError
	return errors.As(err, &ns)
}

type notSentError struct{ err error }

func (e notSentError) Error() string { return e.err.Error() }
func (e notSentError) Unwrap() error { return e.err }

// ErrFenced is a channel another holder took over (a newer generation).
// errors.Is(ErrFenced, ErrBroken) holds.
var ErrFenced = fmt.Errorf("%w: taken over by another holder", ErrBroken)

// ErrNotSealed is a keeper that answered a Hello asking for sealing
// (Options.Seal) in plaintext: it does not seal (an older keeper).
var ErrNotSealed = errors.New("keeper channel: the keeper does not seal its frames")

// ErrUnsupported is an operation the keeper did not announce.
var ErrUnsupported = errors.New("keeper channel: not supported by this keeper")

// Reasons of StartError and FileError: issue 14's closed set.
const (
	ReasonNoSuchFile       = keeperproto.ReasonNoSuchFile
	ReasonIsDirectory      = keeperproto.ReasonIsDirectory
	ReasonNotDirectory     = keeperproto.ReasonNotDirectory
	ReasonPermissionDenied = keeperproto.ReasonPermissionDenied
	ReasonTooLarge         = keeperproto.ReasonTooLarge
	ReasonExists           = keeperproto.ReasonExists
)

// StartError is an exec the keeper could not start. Reason is one of the
// Reason constants (no_such_file: a missing program or cwd; not_directory;
// permission_denied: a file that is not executable, a user that may not;
// is_directory), or empty for a request that is wrong in itself (an
// unknown user name, an empty argv): the provider maps empty to
// invalid_request. Kind is the protocol kind the keeper suggests.
type StartError struct {
	Reason string
	Kind   string
	// Field is what failed: "argv" (the program), "cwd", "user", or "id"
	// (ExecSpec.ID in use: Kind conflict, Reason exists).
	Field string
	Msg   string
}

func (e *StartError) Error() string {
	if e.Reason == "" {
		return "exec: " + e.Msg
	}
	return "exec: " + e.Reason + ": " + e.Msg
}

// FileError is a file operation the keeper refused, with the same
// reasons (empty: a request wrong in itself).
type FileError struct {
	Op     string // "write_file", "read_file", "list_dir"
	Path   string
	Reason string
	Kind   string
	Field  string // "path" or "user"
	Msg    string
}

func (e *FileError) Error() string {
	return e.Op + " " + e.Path + ": " + e.Msg
}

// ErrUnknownExec is an Attach to an exec id the keeper does not hold.
var ErrUnknownExec = errors.New("keeper channel: no such detached exec")
