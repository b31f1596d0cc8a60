package kubernetes

import (
	"sync"

	"github.com/go-logr/logr"
	"go.uber.org/zap"
	"k8s.io/klog/v2"
)

// client-go logs through klog, which writes plain text lines to stderr:
// a stream that ends (the attach stream closed, an exec cut) is an
// "UnhandledError" line there. The resident's stderr is zap's JSON, so
// klog goes to the provider's logger instead, at debug level (what it
// reports the provider has seen and answered already). klog is one per
// process: the first provider's logger takes it.
var klogOnce sync.Once

func routeKlog(log *zap.Logger) {
	klogOnce.Do(func() { klog.SetLogger(logr.New(&klogSink{log: log.Named("client-go")})) })
}

// klogSink is a logr sink writing to zap at debug level.
type klogSink struct {
	log *zap.Logger
}

func (s *klogSink) Init(logr.RuntimeInfo) {}

// Enabled: klog's own verbosity (-v) stays at its default; what client-go
// logs unconditionally comes through.
func (s *klogSink) Enabled(level int) bool { return level <= 0 }

func (s *klogSink) Info(_ int, msg string, kv ...any) { s.log.Debug(msg, zapFields(kv)...) }

func (s *klogSink) Error(err error, msg string, kv ...any) {
	s.log.Debug(msg, append(zapFields(kv), zap.Error(err))...)
}

func (s *klogSink) WithValues(kv ...any) logr.LogSink {
	return &klogSink{log: s.log.With(zapFields(kv)...)}
}

func (s *klogSink) WithName(name string) logr.LogSink { return &klogSink{log: s.log.Named(name)} }

// zapFields are logr's key-value pairs as zap fields.
func zapFields(kv []any) []zap.Field {
	out := make([]zap.Field, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		key, ok := kv[i].(string)
		if !ok {
			continue
		}
		out = append(out, zap.Any(key, kv[i+1]))
	}
	return out
}
