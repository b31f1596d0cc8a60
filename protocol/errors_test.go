package protocol

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// Unknown and missing kinds are transient, in kind and code: a host told to
// branch on the kind is never told "internal" for someone else's word.
func TestUnknownKindsAreTransient(t *testing.T) {
	cases := map[string]error{
		"unknown kind":                  Errorf(Kind("rate_limited"), "slow down"),
		"unknown kind with a code":      &Error{Kind: "weird", Code: CodeInternal, Msg: "x"},
		"no kind":                       errors.New("socket closed"),
		"unknown kind over a known one": Errorf(Kind("weird"), "outer: %w", Errorf(KindNotFound, "inner")),
	}
	for name, err := range cases {
		if k, c := KindOf(err), CodeOf(err); k != KindTransient || c != CodeTransient {
			t.Errorf("%s: kind %s code %d; want transient %d", name, k, c, CodeTransient)
		}
	}
	// A caller reclassifies by wrapping: the outermost known kind wins.
	if k := KindOf(Errorf(KindInvalidRequest, "spec: %w", Errorf(KindNotFound, "network"))); k != KindInvalidRequest {
		t.Errorf("outer kind: %s", k)
	}
	if k := KindOf(fmt.Errorf("op: %w", context.DeadlineExceeded)); k != KindTimeout {
		t.Errorf("deadline: %s", k)
	}
}
