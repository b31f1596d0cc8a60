package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
)

func cmdRm(ctx context.Context, g *globals, stdio stdio, args []string) int {
	fs := g.flags("rm", stdio)
	all := fs.Bool("all", false, "remove every sandbox this install owns (asks first on a terminal)")
	yes := fs.Bool("y", false, "with --all: do not ask")
	ids, err := parseInterleaved(fs, args)
	if err != nil {
		return usageExit(fs, stdio, err)
	}
	if len(ids) == 0 && !*all || len(ids) > 0 && *all {
		return usageError(stdio, "rm", fmt.Errorf("usage: residentctl rm ID... | residentctl rm --all [-y]"))
	}
	s, err := g.connect(ctx, stdio)
	if err != nil {
		return report(stdio, g, "rm", err, exitFailure)
	}
	defer s.close()
	if *all {
		if ids, err = s.allOwned(ctx); err != nil {
			return report(stdio, g, "rm --all", err, exitFailure)
		}
		if len(ids) == 0 {
			return 0
		}
		if !*yes && !confirm(stdio, fmt.Sprintf("remove all %d sandboxes of install id %q?", len(ids), g.installID)) {
			fmt.Fprintln(stdio.err, "residentctl: rm --all: nothing removed")
			return exitFailure
		}
	}
	code := 0
	for _, given := range ids {
		id, err := s.resolveID(ctx, given)
		if err != nil {
			code = report(stdio, g, "rm "+given, err, exitFailure)
			continue
		}
		existed, err := s.Terminate(ctx, id)
		switch {
		case err != nil:
			code = report(stdio, g, "rm "+id, err, exitFailure)
		case !existed:
			// Terminate is idempotent, and so is rm: the sandbox is gone
			// either way, which is what the caller asked for.
			fmt.Fprintf(stdio.err, "residentctl: rm %s: nothing existed (no such sandbox for install id %q)\n", id, g.installID)
		default:
			fmt.Fprintln(stdio.out, id)
		}
	}
	return code
}

func (s *session) allOwned(ctx context.Context) ([]string, error) {
	boxes, err := s.ListOwned(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(boxes))
	for _, b := range boxes {
		ids = append(ids, b.SandboxID)
	}
	return ids, nil
}

// confirm asks on a terminal; without one (a script, a pipe) it goes ahead,
// as the command line asked.
func confirm(stdio stdio, question string) bool {
	in, ok := stdio.in.(*os.File)
	if !ok || !isTerminal(in) {
		return true
	}
	fmt.Fprintf(stdio.err, "%s [y/N] ", question)
	line, _ := bufio.NewReader(in).ReadString('\n')
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes"
}
