package protocol

import "errors"

// Reason says what went wrong with a file, a directory or a program, from a
// closed set, beside the kind: a missing file (not_found, no_such_file) is
// then told from a missing sandbox (not_found, no reason) without reading the
// message. It travels as error.data.reason; Field (error.data.field) names
// the param it is about, so a missing program (argv) and a missing working
// directory (cwd) differ too.
type Reason string

// The closed set of reasons, and the kind each goes with.
const (
	// ReasonNoSuchFile: a path, a program or a cwd that does not exist
	// (not_found).
	ReasonNoSuchFile Reason = "no_such_file"
	// ReasonIsDirectory: a file was asked for and a directory found
	// (invalid_request).
	ReasonIsDirectory Reason = "is_directory"
	// ReasonNotDirectory: a directory was asked for (or a path goes
	// through a file) and something else found (invalid_request).
	ReasonNotDirectory Reason = "not_directory"
	// ReasonPermissionDenied: the sandbox's user (or the exec's) may not do
	// it: a file it cannot read or write, a program it cannot execute, a
	// read-only filesystem (invalid_request).
	ReasonPermissionDenied Reason = "permission_denied"
	// ReasonTooLarge: over a limit the handshake announces (quota).
	ReasonTooLarge Reason = "too_large"
	// ReasonExists: the thing to create is already there (conflict).
	ReasonExists Reason = "exists"
)

// Reasons is the closed set, in the order docs/protocol.md lists it.
var Reasons = []Reason{ReasonNoSuchFile, ReasonIsDirectory, ReasonNotDirectory, ReasonPermissionDenied, ReasonTooLarge, ReasonExists}

// Known reports whether r is in the closed set.
func (r Reason) Known() bool {
	for _, known := range Reasons {
		if r == known {
			return true
		}
	}
	return false
}

// Kind is the error kind a reason goes with.
func (r Reason) Kind() Kind {
	switch r {
	case ReasonNoSuchFile:
		return KindNotFound
	case ReasonTooLarge:
		return KindQuota
	case ReasonExists:
		return KindConflict
	}
	return KindInvalidRequest
}

// Fields a reason may be about (error.data.field).
const (
	FieldPath = "path"
	FieldArgv = "argv"
	FieldCwd  = "cwd"
	FieldUser = "user"
	FieldName = "name"
)

// ReasonError builds an *Error of the reason's kind about field; the
// message is msg (the caller's words, with the path when it helps).
func ReasonError(reason Reason, field, msg string, cause error) error {
	return &Error{Kind: reason.Kind(), Reason: reason, Field: field, Msg: msg, Err: cause}
}

// ReasonOf finds the reason and field of err: those of the outermost *Error
// that has a known reason, or "" when none has.
func ReasonOf(err error) (Reason, string) {
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return "", ""
		}
		if e.Reason.Known() {
			return e.Reason, e.Field
		}
		err = e.Err
	}
	return "", ""
}
