package protocol

import (
	"context"
	"errors"
	"fmt"
)

// Kind is the closed set of error kinds a host can branch on. It travels as
// error.data.kind. Anything outside the set reaching the boundary becomes
// KindTransient (the contract says an unknown provider kind is retryable).
type Kind string

const (
	KindInvalidRequest Kind = "invalid_request"
	KindNotFound       Kind = "not_found"
	KindUnauthorized   Kind = "unauthorized"
	KindQuota          Kind = "quota"
	KindTimeout        Kind = "timeout"
	KindCancelled      Kind = "cancelled"
	KindConflict       Kind = "conflict"
	KindTransient      Kind = "transient"
	KindInternal       Kind = "internal"
)

// Kinds lists the closed set, in the order initialize announces it.
var Kinds = []Kind{
	KindInvalidRequest, KindNotFound, KindUnauthorized, KindQuota, KindTimeout,
	KindCancelled, KindConflict, KindTransient, KindInternal,
}

// Known reports whether k is in the closed set.
func (k Kind) Known() bool {
	for _, known := range Kinds {
		if k == known {
			return true
		}
	}
	return false
}

// JSON-RPC error codes. The standard ones are used where JSON-RPC defines the
// condition; each other kind has its own code in the server range so a host
// that ignores data.kind can still tell them apart.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
	CodeNotFound       = -32001
	CodeUnauthorized   = -32002
	CodeQuota          = -32003
	CodeTimeout        = -32004
	CodeConflict       = -32005
	CodeTransient      = -32006
	CodeCancelled      = -32800 // LSP's RequestCancelled
)

// Code is the JSON-RPC code used for kind when no more specific code applies.
func (k Kind) Code() int64 {
	switch k {
	case KindInvalidRequest:
		return CodeInvalidParams
	case KindNotFound:
		return CodeNotFound
	case KindUnauthorized:
		return CodeUnauthorized
	case KindQuota:
		return CodeQuota
	case KindTimeout:
		return CodeTimeout
	case KindCancelled:
		return CodeCancelled
	case KindConflict:
		return CodeConflict
	case KindInternal:
		return CodeInternal
	default:
		return CodeTransient
	}
}

// Error is a failure with a kind. Providers and the resident return it (or
// wrap it with %w); the boundary converts it with KindOf and keeps the kind.
type Error struct {
	Kind Kind
	// Code overrides Kind.Code() for the standard JSON-RPC conditions.
	Code int64
	Msg  string
	Err  error
	// Reason, when set, says what went wrong from a closed set (see
	// Reason); Field names the param it is about.
	Reason Reason
	Field  string
	// msgHasCause: Msg already spells out Err (Errorf with %w).
	msgHasCause bool
}

// Error is Msg and the cause's text, joined by ": ", each when present.
func (e *Error) Error() string {
	switch {
	case e.msgHasCause:
		return e.Msg
	case e.Msg != "" && e.Err != nil:
		return e.Msg + ": " + e.Err.Error()
	case e.Msg != "":
		return e.Msg
	case e.Err != nil:
		return e.Err.Error()
	}
	return string(e.Kind)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error of kind; a %w verb in format is kept as the cause.
func Errorf(kind Kind, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &Error{Kind: kind, Msg: err.Error(), Err: errors.Unwrap(err), msgHasCause: true}
}

// Wrap gives err a kind without changing its message.
func Wrap(kind Kind, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: kind, Err: err}
}

// KindOf finds the kind of err: the outermost *Error wins, so a caller can
// reclassify a provider's error by wrapping it. Context errors map to
// cancelled and timeout; an error with no kind, or an unknown one, is
// transient.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		if e.Kind.Known() {
			return e.Kind
		}
		return KindTransient
	}
	switch {
	case errors.Is(err, context.Canceled):
		return KindCancelled
	case errors.Is(err, context.DeadlineExceeded):
		return KindTimeout
	}
	return KindTransient
}

// CodeOf is the JSON-RPC code for err. A code given with a kind outside the
// closed set is dropped with the kind: the error is transient, code and all.
func CodeOf(err error) int64 {
	var e *Error
	if errors.As(err, &e) && e.Code != 0 && e.Kind.Known() {
		return e.Code
	}
	return KindOf(err).Code()
}

// ErrorData is the data member of every error response. Reason and Field
// are present only for a failure about a file, a directory, a program or a
// volume (see Reason).
type ErrorData struct {
	Kind   Kind   `json:"kind"`
	Reason Reason `json:"reason,omitempty"`
	Field  string `json:"field,omitempty"`
}

// DataOf is the error.data of err: its kind and, when the chain has one,
// its reason and field.
func DataOf(err error) ErrorData {
	reason, field := ReasonOf(err)
	return ErrorData{Kind: KindOf(err), Reason: reason, Field: field}
}
