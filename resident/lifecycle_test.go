package resident

import (
	"errors"
	"testing"

	"go.uber.org/goleak"

	"github.com/resident-dev/resident/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLifecycle(t *testing.T) {
	h := startHost(t, newFake())
	h.callErr(protocol.MethodSandboxList, nil, protocol.KindInvalidRequest)
	h.callErr(protocol.MethodShutdown, nil, protocol.KindInvalidRequest)
	h.callErr(protocol.MethodInitialize, map[string]any{"protocol_version": 2, "install_id": "a"}, protocol.KindInvalidRequest)
	h.callErr(protocol.MethodInitialize, map[string]any{"protocol_version": 1, "install_id": "bad id!"}, protocol.KindInvalidRequest)
	h.callErr(protocol.MethodInitialize, map[string]any{"protocol_version": 1}, protocol.KindInvalidRequest)
	h.callErr(protocol.MethodInitialize, map[string]any{"protocol_version": 1, "install_id": "a", "tag_prefix": "-x"}, protocol.KindInvalidRequest)

	res := h.initialize(nil)
	if res.ProtocolVersion != 1 || res.Provider.Name != "fake" || res.OwnerTag != "resident-install-id" {
		t.Fatalf("initialize result: %+v", res)
	}
	if len(res.ErrorKinds) != len(protocol.Kinds) || res.Limits.MaxFrameBytes == 0 || res.Limits.DefaultExecTimeoutS == 0 {
		t.Fatalf("initialize must announce kinds and limits: %+v", res)
	}
	if !res.Capabilities.Store || !res.Capabilities.WriteFile {
		t.Fatalf("capabilities: %+v", res.Capabilities)
	}
	h.callErr(protocol.MethodInitialize, map[string]any{"protocol_version": 1, "install_id": "a"}, protocol.KindInvalidRequest)

	h.call(protocol.MethodShutdown, nil, nil)
	if err := awaitEnd(t, h); err != nil {
		t.Fatalf("Serve after shutdown: %v", err)
	}
}

func TestStdinEOFStopsInFlightExec(t *testing.T) {
	h := startHost(t, newFake())
	h.initialize(nil)
	var box protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{}}, &box)
	id := h.send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box.SandboxID, "argv": []string{"sleep"}, "exec_id": "e1"})
	_ = h.toRes.Close()
	if err := awaitEnd(t, h); err != nil {
		t.Fatalf("Serve after EOF: %v", err)
	}
	if m := h.await(id); m.Error == nil || m.Error.Data.Kind != protocol.KindCancelled {
		t.Fatalf("in-flight exec after EOF: %+v", m)
	}
}

func TestProtocolErrorEndsSession(t *testing.T) {
	h := startHost(t, newFake())
	_, _ = h.toRes.Write([]byte("Content-Length: nope\r\n\r\n"))
	if err := awaitEnd(t, h); !errors.Is(err, ErrProtocol) {
		t.Fatalf("want ErrProtocol, got %v", err)
	}
	m := h.await("null")
	if m.Error == nil || m.Error.Code != protocol.CodeParseError {
		t.Fatalf("a bad header is answered with a parse error before exit: %+v", m)
	}
}

func TestFrameOverLimitEndsSession(t *testing.T) {
	h := startHost(t, newFake(), func(o *Options) { o.Limits = DefaultLimits(); o.Limits.MaxFrameBytes = 100 })
	_, _ = h.toRes.Write([]byte("Content-Length: 101\r\n\r\n"))
	if err := awaitEnd(t, h); !errors.Is(err, ErrProtocol) {
		t.Fatalf("want ErrProtocol, got %v", err)
	}
}
