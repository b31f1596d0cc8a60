//go:build unix

package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/resident-dev/resident/protocol"
)

// followWindowSize calls resize with t's size on every SIGWINCH until ctx
// ends, when it differs from the last one sent (first: sent). Changes that
// come while a resize is in flight are merged into one.
func followWindowSize(ctx context.Context, t *localTerminal, sent protocol.WindowSize, resize func(protocol.WindowSize)) {
	changed := make(chan os.Signal, 1)
	signal.Notify(changed, syscall.SIGWINCH)
	defer signal.Stop(changed)
	last := sent
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			if size := t.size(); size != last {
				last = size
				resize(size)
			}
		}
	}
}
