package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/resident-dev/resident/protocol"
)

// classify gives an API server error its protocol kind, in one place. ctx
// is the context the call ran under: when the provider's own bound ended
// it, the API server is hung (transient); when the caller's ended it, the
// context error is kept so the resident reports cancelled or timeout.
func classify(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", what, err)
	}
	if ctx != nil && errors.Is(context.Cause(ctx), errAPITimeout) {
		return &protocol.Error{Kind: protocol.KindTransient, Msg: what, Err: errAPITimeout}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return &protocol.Error{Kind: kindOf(err), Msg: what, Err: err}
}

// kindOf maps the API server's status reasons onto the closed set.
// Unauthorized (no valid credentials) and Forbidden (RBAC says no) both
// are unauthorized, with the server's message telling them apart; a quota
// rejection is quota; an API server that cannot be reached, or says it is
// busy, is transient.
func kindOf(err error) protocol.Kind {
	switch {
	case apierrors.IsNotFound(err), apierrors.IsGone(err):
		return protocol.KindNotFound
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return protocol.KindConflict
	case isQuota(err):
		return protocol.KindQuota
	case apierrors.IsUnauthorized(err), apierrors.IsForbidden(err):
		return protocol.KindUnauthorized
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsRequestEntityTooLargeError(err),
		apierrors.IsMethodNotSupported(err), apierrors.IsNotAcceptable(err), apierrors.IsUnsupportedMediaType(err):
		return protocol.KindInvalidRequest
	case apierrors.IsTooManyRequests(err):
		return protocol.KindQuota
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return protocol.KindTransient
	}
	return protocol.KindTransient
}

// isQuota recognises a ResourceQuota or LimitRange admission refusal: a
// Forbidden whose message names the quota ("exceeded quota", "must
// specify limits").
func isQuota(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	return s.Reason == metav1.StatusReasonForbidden && (strings.Contains(s.Message, "exceeded quota") || strings.Contains(s.Message, "forbidden: maximum"))
}

// notFound is the one error for an id that does not name one of our
// sandboxes: missing, malformed and not ours read the same.
func notFound(id string) error {
	if len(id) > 64 {
		id = id[:64] + "..."
	}
	return protocol.Errorf(protocol.KindNotFound, "sandbox %q not found", id)
}
