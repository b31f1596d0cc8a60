package resident

import (
	"strings"
	"testing"

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
