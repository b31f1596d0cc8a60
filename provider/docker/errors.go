package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
)

// classify gives an Engine API error its protocol kind, in one place. what
// is a short noun-first context ("container create"). ctx is the context the
// call ran under: when the provider's own bound ended it (callCtx), the
// engine is hung, which is transient; when the caller's context ended it,
// the context error is kept so the resident reports cancelled or timeout.
func classify(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", what, err)
	}
	if ctx != nil && errors.Is(context.Cause(ctx), errEngineTimeout) {
		return kindErr(protocol.KindTransient, errEngineTimeout, "%s", what)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return &protocol.Error{Kind: kindOf(err), Msg: what, Err: err}
}

// kindOf maps the engine's error classes (containerd/errdefs, which the
// client derives from the HTTP status) onto the closed set. An engine that
// cannot be reached is transient: the host may retry once it is back.
func kindOf(err error) protocol.Kind {
	switch {
	case client.IsErrConnectionFailed(err), cerrdefs.IsUnavailable(err):
		return protocol.KindTransient
	case cerrdefs.IsNotFound(err):
		return protocol.KindNotFound
	case cerrdefs.IsConflict(err), cerrdefs.IsAlreadyExists(err):
		return protocol.KindConflict
	case cerrdefs.IsInvalidArgument(err), cerrdefs.IsNotImplemented(err), cerrdefs.IsFailedPrecondition(err):
		return protocol.KindInvalidRequest
	case cerrdefs.IsUnauthorized(err), cerrdefs.IsPermissionDenied(err):
		return protocol.KindUnauthorized
	case cerrdefs.IsResourceExhausted(err):
		return protocol.KindQuota
	}
	return protocol.KindTransient
}

// kindErr gives err a kind and a context prefix. (protocol.Errorf with %w
// would print err's text twice: once in the message, once as the cause.)
func kindErr(kind protocol.Kind, err error, format string, args ...any) error {
	return &protocol.Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Err: err}
}

// isRemovalInProgress recognises the engine's answer when another caller is
// already removing the container: for terminate that is success.
func isRemovalInProgress(err error) bool {
	return err != nil && strings.Contains(err.Error(), "removal of container") && strings.Contains(err.Error(), "already in progress")
}

// notFound is the one error for a sandbox id that does not name one of our
// sandboxes: missing, malformed and not-ours all read the same, so a caller
// learns nothing about containers it does not own.
func notFound(id string) error {
	return protocol.Errorf(protocol.KindNotFound, "sandbox %q not found", shortID(id))
}

func shortID(id string) string {
	if len(id) > 64 {
		return id[:64] + "..."
	}
	return id
}
