package resident

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
)

func TestProviderErrorKinds(t *testing.T) {
	h := startHost(t, newFake())
	h.initialize(nil)
	box := newBox(t, h)
	for _, kind := range []protocol.Kind{protocol.KindNotFound, protocol.KindQuota, protocol.KindConflict, protocol.KindTimeout} {
		h.callErr(protocol.MethodSandboxExec, execParams(box, "k-"+string(kind), "fail", string(kind), "boom"), kind)
	}
	h.callErr(protocol.MethodSandboxExec, execParams(box, "k-weird", "fail", "rate_limited", "slow down"), protocol.KindTransient)
	h.callErr(protocol.MethodSandboxExec, execParams(box, "k-plain", "plainerr", "socket closed"), protocol.KindTransient)
}

func TestPanicIsInternalAndSessionContinues(t *testing.T) {
	h := startHost(t, newFake())
	h.initialize(nil)
	box := newBox(t, h)
	msg := h.callErr(protocol.MethodSandboxExec, execParams(box, "p", "panic"), protocol.KindInternal)
	if !strings.Contains(msg, "internal error") {
		t.Fatalf("panic message: %q", msg)
	}
	h.call(protocol.MethodSandboxList, nil, nil)
}

// A provider error of a kind outside the closed set is transient on the
// wire, kind and code both (docs/protocol.md §6), whatever code it carried.
func TestUnknownProviderKindIsTransient(t *testing.T) {
	h := startHost(t, newFake())
	h.initialize(nil)
	box := newBox(t, h)
	for i, kind := range []string{"rate_limited", "", "INTERNAL", "internal "} {
		m := h.await(h.send(protocol.MethodSandboxExec, execParams(box, fmt.Sprintf("u-%d", i), "fail", kind, "boom")))
		if m.Error == nil || m.Error.Data.Kind != protocol.KindTransient || m.Error.Code != protocol.CodeTransient {
			t.Errorf("provider kind %q: answered %+v; want transient, code %d", kind, m.Error, protocol.CodeTransient)
		}
	}
}

// initialize announces the provider's bound on one call.
func TestInitializeAnnouncesTheCallBound(t *testing.T) {
	fake := newFake()
	fake.callTimeout = 7 * time.Second
	h := startHost(t, fake)
	if got := h.initialize(nil).Limits.CallTimeoutS; got != 7 {
		t.Fatalf("limits.call_timeout_s = %d; want the provider's 7", got)
	}
}
