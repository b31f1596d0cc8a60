package main

import (
	"syscall"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// parseSignal takes "SIGTERM", "TERM" or "15" (keeperproto's table).
func parseSignal(name string) (syscall.Signal, bool) {
	n, ok := keeperproto.SignalNumber(name)
	return syscall.Signal(n), ok
}

func signalName(sig syscall.Signal) string { return keeperproto.SignalName(int(sig)) }
