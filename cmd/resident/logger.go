package main

import (
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/resident-dev/resident/hardening"
)

// newLogger writes zap JSON to stderr through the scrubber. Each entry is one
// Write, so scrubbing the encoded line covers every field, message and
// stack trace at once; secrets are registered in their JSON-escaped forms too.
func newLogger(level string, scrubber *hardening.Scrubber) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, err
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), scrubbingSink{out: zapcore.Lock(os.Stderr), scrubber: scrubber}, lvl)
	return zap.New(core, zap.AddCaller(), zap.AddStacktrace(zapcore.ErrorLevel)), nil
}

type scrubbingSink struct {
	out      zapcore.WriteSyncer
	scrubber *hardening.Scrubber
}

func (s scrubbingSink) Write(p []byte) (int, error) {
	if _, err := s.out.Write(s.scrubber.ScrubJSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (s scrubbingSink) Sync() error { return s.out.Sync() }
