package main

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/serve"
)

// serveProvider runs a built-in provider as an external one: its parent
// resident does the scrubbing and keeps the host's rules; this process only
// does the provider's work, and ends when its stdin does.
func serveProvider(name string, cfg provider.Config, in, frames *os.File) int {
	log := cfg.Logger
	var srv atomic.Pointer[serve.Server]
	cfg.Notify = func(method string, params any) {
		if s := srv.Load(); s != nil {
			s.Progress(method, params)
		}
	}
	prov, err := provider.Open(name, cfg)
	if err != nil {
		log.Error("cannot load provider", zap.Error(err))
		return exitFailure
	}
	defer func() { _ = prov.Close() }()
	s := serve.New(prov, log.Named("serve"))
	srv.Store(s)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := s.Serve(ctx, in, frames); err != nil {
		log.Error("serving the provider failed", zap.Error(err))
		return exitFailure
	}
	return exitOK
}
