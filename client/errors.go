package client

import (
	"errors"
	"fmt"
	"strings"

	"github.com/resident-dev/resident/protocol"
)

// One sentinel per error kind in protocol.Kinds. An *Error matches the
// sentinel of its kind with errors.Is:
//
//	if errors.Is(err, client.ErrNotFound) { ... }
var (
	ErrInvalidRequest error = &kindSentinel{protocol.KindInvalidRequest}
	ErrNotFound       error = &kindSentinel{protocol.KindNotFound}
	ErrUnauthorized   error = &kindSentinel{protocol.KindUnauthorized}
	ErrQuota          error = &kindSentinel{protocol.KindQuota}
	ErrTimeout        error = &kindSentinel{protocol.KindTimeout}
	ErrCancelled      error = &kindSentinel{protocol.KindCancelled}
	ErrConflict       error = &kindSentinel{protocol.KindConflict}
	ErrTransient      error = &kindSentinel{protocol.KindTransient}
	ErrInternal       error = &kindSentinel{protocol.KindInternal}
)

// Errors that do not come from an error response.
var (
	// ErrCredentialsExpired: the session's credentials expired or were
	// refused, and the resident is exiting (or has exited) with code 3.
	// Respawn it with fresh credentials. Matched by an unauthorized *Error,
	// by every call made after the resident/credentials_expired
	// notification, and by an *ExitError with code 3.
	ErrCredentialsExpired = errors.New("credentials expired; respawn the resident with fresh credentials")
	// ErrExited: the resident exited, or its stream ended, before it
	// answered. The error is an *ExitError with the details.
	ErrExited = errors.New("resident exited")
	// ErrClosed: the call was made after Close.
	ErrClosed = errors.New("client closed")
)

type kindSentinel struct{ kind protocol.Kind }

func (s *kindSentinel) Error() string { return string(s.kind) }

// Error is an error response from the resident.
type Error struct {
	// Method is the request that failed.
	Method string
	// Code is the JSON-RPC code, for the finer distinctions in the
	// protocol's table (-32600 versus -32602, say).
	Code int64
	// Kind is error.data.kind: branch on it, or use errors.Is with the
	// sentinels. A kind this client does not know is treated as transient,
	// as the protocol says.
	Kind protocol.Kind
	// Message is for people; it is scrubbed and its wording may change.
	Message string
	// Reason and Field are error.data.reason and field: what went wrong
	// with a file, a directory, a program or a volume, from a closed set
	// (protocol.Reason), and the param it is about. Empty otherwise.
	Reason protocol.Reason
	Field  string
}

// ReasonOf is the reason and field of the *Error in err's chain, or "".
func ReasonOf(err error) (protocol.Reason, string) {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason, e.Field
	}
	return "", ""
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (%s)", e.Method, e.Message, e.Kind)
}

// Is matches the sentinel of e's kind, and ErrCredentialsExpired for
// unauthorized (which always means the session is ending with code 3).
func (e *Error) Is(target error) bool {
	if target == ErrCredentialsExpired {
		return e.Kind == protocol.KindUnauthorized
	}
	s, ok := target.(*kindSentinel)
	if !ok {
		return false
	}
	if !e.Kind.Known() {
		return s.kind == protocol.KindTransient
	}
	return s.kind == e.Kind
}

// KindOf is the protocol kind of err: the kind of an *Error or of a
// sentinel in its chain, cancelled for a context error, and "" for anything
// else (a local I/O error, ErrExited, ErrClosed).
func KindOf(err error) protocol.Kind {
	var e *Error
	if errors.As(err, &e) {
		if e.Kind.Known() {
			return e.Kind
		}
		return protocol.KindTransient
	}
	var s *kindSentinel
	if errors.As(err, &s) {
		return s.kind
	}
	return ""
}

// ExitError describes a resident that went away: the process exited, or the
// stream ended, before the answer came. It matches ErrExited, and
// ErrCredentialsExpired when the exit code is 3.
type ExitError struct {
	// Code is the process's exit code: 0 after shutdown or stdin EOF, 1
	// failure, 2 unrecoverable protocol error, 3 credentials expired. It is
	// -1 when a signal killed it or it is not a process (Attach).
	Code int
	// Signal names the signal that ended the process, if one did, as Go
	// spells it ("killed", "terminated").
	Signal string
	// Killed: Close killed the process after its grace period.
	Killed bool
	// LastLog is the resident's last log message on stderr, if any, which
	// usually says why it stopped.
	LastLog string
	// Protocol is the null-id error the resident sent before leaving, if it
	// sent one (an unrecoverable frame error sends -32700 and exits 2).
	Protocol *Error
	// Stream is the error that ended reading, when it was not a clean end
	// of stream.
	Stream error
}

func (e *ExitError) Error() string {
	var b strings.Builder
	switch {
	case e.Killed:
		b.WriteString("resident killed after it did not exit in time")
	case e.Signal != "":
		b.WriteString("resident terminated by signal: " + e.Signal)
	case e.Code >= 0:
		fmt.Fprintf(&b, "resident exited with code %d", e.Code)
		if meaning := exitMeaning[e.Code]; meaning != "" {
			b.WriteString(" (" + meaning + ")")
		}
	default:
		b.WriteString("resident stream ended")
	}
	if e.Stream != nil {
		b.WriteString(": " + e.Stream.Error())
	}
	if e.Protocol != nil {
		b.WriteString("; it said: " + e.Protocol.Message)
	}
	if e.LastLog != "" {
		b.WriteString("; last log: " + e.LastLog)
	}
	return b.String()
}

var exitMeaning = map[int]string{
	0: "clean exit",
	1: "failure",
	2: "unrecoverable protocol error",
	3: "credentials expired",
}

func (e *ExitError) Is(target error) bool {
	return target == ErrExited || (target == ErrCredentialsExpired && e.Code == 3)
}

func (e *ExitError) Unwrap() error { return e.Stream }

// wireError is error in a response frame.
type wireError struct {
	Code    int64               `json:"code"`
	Message string              `json:"message"`
	Data    *protocol.ErrorData `json:"data"`
}

func (w *wireError) toError(method string) *Error {
	kind := protocol.KindTransient
	if w.Data != nil && w.Data.Kind != "" {
		kind = w.Data.Kind
	}
	e := &Error{Method: method, Code: w.Code, Kind: kind, Message: w.Message}
	if w.Data != nil && w.Data.Reason.Known() {
		e.Reason, e.Field = w.Data.Reason, w.Data.Field
	}
	return e
}
