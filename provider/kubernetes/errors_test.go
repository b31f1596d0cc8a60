package kubernetes

import (
	"context"
	"errors"
	"net"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/resident-dev/resident/protocol"
)

// API server errors map onto the closed set of kinds in one place.
func TestClassify(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	cases := []struct {
		err  error
		want protocol.Kind
	}{
		{apierrors.NewNotFound(pods, "x"), protocol.KindNotFound},
		{apierrors.NewConflict(pods, "x", errors.New("changed")), protocol.KindConflict},
		{apierrors.NewAlreadyExists(pods, "x"), protocol.KindConflict},
		{apierrors.NewUnauthorized("token expired"), protocol.KindUnauthorized},
		{apierrors.NewForbidden(pods, "x", errors.New("RBAC: no")), protocol.KindUnauthorized},
		{apierrors.NewForbidden(pods, "x", errors.New("exceeded quota: q, requested: cpu=2")), protocol.KindQuota},
		{apierrors.NewTooManyRequests("slow down", 1), protocol.KindQuota},
		{apierrors.NewBadRequest("no"), protocol.KindInvalidRequest},
		{apierrors.NewServiceUnavailable("restarting"), protocol.KindTransient},
		{apierrors.NewTimeoutError("slow", 1), protocol.KindTransient},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, protocol.KindTransient},
	}
	for _, c := range cases {
		if got := protocol.KindOf(classify(context.Background(), "call", c.err)); got != c.want {
			t.Errorf("%v: kind %s, want %s", c.err, got, c.want)
		}
	}
	ctx, cancel := context.WithTimeoutCause(context.Background(), 0, errAPITimeout)
	defer cancel()
	<-ctx.Done()
	if got := protocol.KindOf(classify(ctx, "call", context.DeadlineExceeded)); got != protocol.KindTransient {
		t.Errorf("the provider's own bound: %s, want transient", got)
	}
}
