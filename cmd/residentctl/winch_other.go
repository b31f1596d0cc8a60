//go:build !unix

package main

import (
	"context"

	"github.com/resident-dev/resident/protocol"
)

// followWindowSize has no SIGWINCH to follow off Unix: the command keeps
// the size it started with.
func followWindowSize(ctx context.Context, _ *localTerminal, _ protocol.WindowSize, _ func(protocol.WindowSize)) {
	<-ctx.Done()
}
