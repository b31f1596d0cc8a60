package main

import (
	"context"
	"fmt"
)

// cmdVolume is `volume ls|create|rm`: ls lists as `volumes` does; create
// and rm need capabilities.volume_admin.
func cmdVolume(ctx context.Context, g *globals, stdio stdio, args []string) int {
	const usage = "usage: residentctl volume ls [--json] | volume create NAME... | volume rm NAME..."
	if len(args) == 0 {
		return usageError(stdio, "volume", fmt.Errorf(usage))
	}
	sub, rest := args[0], args[1:]
	if sub == "ls" {
		return cmdVolumes(ctx, g, stdio, rest)
	}
	if sub != "create" && sub != "rm" {
		return usageError(stdio, "volume", fmt.Errorf("unknown subcommand %q; %s", sub, usage))
	}
	fs := g.flags("volume "+sub, stdio)
	names, err := parseInterleaved(fs, rest)
	if err != nil {
		return usageExit(fs, stdio, err)
	}
	if len(names) == 0 {
		return usageError(stdio, "volume "+sub, fmt.Errorf(usage))
	}
	s, err := g.connect(ctx, stdio)
	if err != nil {
		return report(stdio, g, "volume "+sub, err, exitFailure)
	}
	defer s.close()
	code := 0
	for _, name := range names {
		if sub == "create" {
			err = s.CreateVolume(ctx, name)
		} else {
			err = s.DeleteVolume(ctx, name)
		}
		if err != nil {
			code = report(stdio, g, "volume "+sub+" "+name, err, exitFailure)
			continue
		}
		fmt.Fprintln(stdio.out, name)
	}
	return code
}
