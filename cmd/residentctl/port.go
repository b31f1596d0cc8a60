package main

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// cmdPort forwards a port of a sandbox for as long as it runs: it prints
// the loopback address, then holds the session (the forward lives with it)
// until Ctrl-C or until the resident goes.
func cmdPort(ctx context.Context, g *globals, stdio stdio, args []string) int {
	fs := g.flags("port", stdio)
	rest, err := parseInterleaved(fs, args)
	if err != nil {
		return usageExit(fs, stdio, err)
	}
	if len(rest) != 2 {
		return usageError(stdio, "port", fmt.Errorf("usage: residentctl port ID PORT"))
	}
	port, err := strconv.Atoi(rest[1])
	if err != nil {
		return usageError(stdio, "port", fmt.Errorf("PORT %q is not a number", rest[1]))
	}
	s, err := g.connect(ctx, stdio)
	if err != nil {
		return report(stdio, g, "port", err, exitFailure)
	}
	defer s.close()
	id, err := s.resolveID(ctx, rest[0])
	if err != nil {
		return report(stdio, g, "port", err, exitFailure)
	}
	fwd, err := s.ForwardPort(ctx, id, port)
	if err != nil {
		return report(stdio, g, "port", err, exitFailure)
	}
	fmt.Fprintln(stdio.out, fwd.Address)
	fmt.Fprintf(stdio.err, "residentctl: %s in %s is at http://%s until Ctrl-C\n", rest[1], rest[0], fwd.Address)
	select {
	case <-ctx.Done():
	case <-s.Done():
		fmt.Fprintln(stdio.err, "residentctl: the resident ended; the forward is gone")
		return exitFailure
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = s.ClosePort(closeCtx, fwd.ForwardID)
	return 0
}
