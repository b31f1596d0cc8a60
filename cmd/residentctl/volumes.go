package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/resident-dev/resident/protocol"
)

func cmdVolumes(ctx context.Context, g *globals, stdio stdio, args []string) int {
	fs := g.flags("volumes", stdio)
	asJSON := fs.Bool("json", false, "print the volumes as a JSON array")
	if pos, err := parseInterleaved(fs, args); err != nil {
		return usageExit(fs, stdio, err)
	} else if len(pos) != 0 {
		return usageError(stdio, "volumes", fmt.Errorf("usage: residentctl volumes [--json]"))
	}
	s, err := g.connect(ctx, stdio)
	if err != nil {
		return report(stdio, g, "volumes", err, exitFailure)
	}
	defer s.close()
	vols, err := s.ListVolumes(ctx)
	if err != nil {
		return report(stdio, g, "volumes", err, exitFailure)
	}
	if *asJSON {
		return printJSON(stdio, vols)
	}
	tw := tabwriter.NewWriter(stdio.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VOLUME\tCREATED")
	for _, v := range vols {
		fmt.Fprintf(tw, "%s\t%s\n", v.Name, ago(v.CreatedAt))
	}
	_ = tw.Flush()
	return 0
}

func cmdLsVolume(ctx context.Context, g *globals, stdio stdio, args []string) int {
	fs := g.flags("ls-volume", stdio)
	asJSON := fs.Bool("json", false, "print the listing as JSON ({entries, truncated})")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return usageExit(fs, stdio, err)
	}
	if len(pos) < 1 || len(pos) > 2 {
		return usageError(stdio, "ls-volume", fmt.Errorf("usage: residentctl ls-volume VOL [PATH] [--json]"))
	}
	vol, path := pos[0], ""
	if len(pos) == 2 {
		path = pos[1]
	}
	s, err := g.connect(ctx, stdio)
	if err != nil {
		return report(stdio, g, "ls-volume", err, exitFailure)
	}
	defer s.close()
	res, err := s.ListDir(ctx, protocol.ListDirParams{Root: vol, Path: path, Limit: s.Info().Limits.MaxListDirEntries})
	if err != nil {
		return report(stdio, g, "ls-volume", err, exitFailure)
	}
	if *asJSON {
		return printJSON(stdio, res)
	}
	tw := tabwriter.NewWriter(stdio.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tSIZE\tMODIFIED\tNAME")
	for _, e := range res.Entries {
		name := e.Name
		if e.Type == protocol.EntryDir {
			name += "/"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", e.Type, e.Size, e.Mtime.Local().Format("2006-01-02 15:04:05"), name)
	}
	_ = tw.Flush()
	if res.Truncated {
		fmt.Fprintf(stdio.err, "residentctl: ls-volume: only the first %d entries are shown\n", len(res.Entries))
	}
	return 0
}

func cmdCat(ctx context.Context, g *globals, stdio stdio, args []string) int {
	fs := g.flags("cat", stdio)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return usageExit(fs, stdio, err)
	}
	if len(pos) == 1 {
		if vol, path, ok := strings.Cut(pos[0], ":"); ok {
			pos = []string{vol, path}
		}
	}
	if len(pos) != 2 {
		return usageError(stdio, "cat", fmt.Errorf("usage: residentctl cat VOL:PATH (or VOL PATH)"))
	}
	vol, path := pos[0], pos[1]
	s, err := g.connect(ctx, stdio)
	if err != nil {
		return report(stdio, g, "cat", err, exitFailure)
	}
	defer s.close()
	res, err := s.ReadFile(ctx, vol, path, stdio.out)
	if err != nil {
		return report(stdio, g, "cat", err, exitFailure)
	}
	if res.Redacted {
		fmt.Fprintf(stdio.err, "residentctl: cat: secrets in %s were replaced by [REDACTED]\n", path)
	}
	return 0
}

// parseInterleaved parses flags placed before, between or after the
// positional arguments (`ls-volume work --json`, `ls-volume --json work`)
// and returns the positional ones; everything after "--" is positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}
