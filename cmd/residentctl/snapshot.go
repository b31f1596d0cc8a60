package main

import (
	"context"
	"fmt"
	"text/tabwriter"
)

// snapshot ID NAME | snapshot ls [--json] | snapshot rm NAME...
func cmdSnapshot(ctx context.Context, g *globals, stdio stdio, args []string) int {
	fs := g.flags("snapshot", stdio)
	asJSON := fs.Bool("json", false, "with ls: print JSON")
	words, err := parseInterleaved(fs, args)
	if err != nil {
		return usageExit(fs, stdio, err)
	}
	usage := fmt.Errorf("usage: residentctl snapshot ID NAME | snapshot ls [--json] | snapshot rm NAME...")
	if len(words) == 0 || (words[0] != "ls" && len(words) != 2) || (words[0] == "rm" && len(words) < 2) {
		return usageError(stdio, "snapshot", usage)
	}
	s, err := g.connect(ctx, stdio)
	if err != nil {
		return report(stdio, g, "snapshot", err, exitFailure)
	}
	defer s.close()
	switch words[0] {
	case "ls":
		list, err := s.ListSnapshots(ctx)
		if err != nil {
			return report(stdio, g, "snapshot ls", err, exitFailure)
		}
		if *asJSON {
			return printJSON(stdio, list)
		}
		tw := tabwriter.NewWriter(stdio.out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tIMAGE\tCREATED\tSIZE")
		for _, sn := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", sn.Name, sn.Image, sn.CreatedAt.Format("2006-01-02 15:04:05"), sn.SizeBytes)
		}
		_ = tw.Flush()
		return 0
	case "rm":
		code := 0
		for _, name := range words[1:] {
			if _, err := s.DeleteSnapshot(ctx, name); err != nil {
				code = report(stdio, g, "snapshot rm "+name, err, exitFailure)
			}
		}
		return code
	}
	id, err := s.resolveID(ctx, words[0])
	if err != nil {
		return report(stdio, g, "snapshot "+words[0], err, exitFailure)
	}
	snap, err := s.Snapshot(ctx, id, words[1])
	if err != nil {
		return report(stdio, g, "snapshot "+id, err, exitFailure)
	}
	fmt.Fprintln(stdio.out, snap.Image)
	return 0
}
