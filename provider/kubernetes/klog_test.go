package kubernetes

import (
	"errors"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// What client-go logs through klog reaches the provider's zap logger, at
// debug level with its key-value pairs, never stderr's plain text.
func TestKlogGoesToZap(t *testing.T) {
	core, seen := observer.New(zapcore.DebugLevel)
	l := logr.New(&klogSink{log: zap.New(core)}).WithName("remotecommand").WithValues("stream", "stdin")
	l.Error(errors.New("use of closed network connection"), "Copying stdin failed", "logger", "UnhandledError")
	l.V(4).Info("too verbose")
	l.Info("Websocket Ping failed", 7, "odd key")
	entries := seen.All()
	if len(entries) != 2 {
		t.Fatalf("got %d entries, want 2 (verbose lines dropped): %+v", len(entries), entries)
	}
	e := entries[0]
	ctx := e.ContextMap()
	if e.Level != zapcore.DebugLevel || e.Message != "Copying stdin failed" || e.LoggerName != "remotecommand" ||
		ctx["stream"] != "stdin" || ctx["logger"] != "UnhandledError" || ctx["error"] != "use of closed network connection" {
		t.Fatalf("entry %+v %v", e, ctx)
	}
}
