package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

func cmdLs(ctx context.Context, g *globals, stdio stdio, args []string) int {
	fs := g.flags("ls", stdio)
	asJSON := fs.Bool("json", false, "print the sandboxes as a JSON array (the protocol's Sandbox objects)")
	if pos, err := parseInterleaved(fs, args); err != nil {
		return usageExit(fs, stdio, err)
	} else if len(pos) != 0 {
		return usageError(stdio, "ls", fmt.Errorf("usage: residentctl ls [--json]"))
	}
	s, err := g.connect(ctx, stdio)
	if err != nil {
		return report(stdio, g, "ls", err, exitFailure)
	}
	defer s.close()
	boxes, err := s.ListOwned(ctx)
	if err != nil {
		return report(stdio, g, "ls", err, exitFailure)
	}
	if *asJSON {
		return printJSON(stdio, boxes)
	}
	tw := tabwriter.NewWriter(stdio.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SANDBOX ID\tSTATE\tCREATED\tIMAGE\tTAGS")
	owner := s.Info().OwnerTag
	for _, b := range boxes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", b.SandboxID, b.State, ago(b.CreatedAt), orDash(b.Image), tagList(b.Tags, owner))
	}
	_ = tw.Flush()
	return 0
}

func printJSON(stdio stdio, v any) int {
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		fmt.Fprintln(stdio.err, "residentctl:", err)
		return exitFailure
	}
	out = append(out, '\n')
	if _, err := stdio.out.Write(out); err != nil {
		return exitFailure
	}
	return 0
}

// tagList shows the host's tags, leaving out the owner tag every sandbox has.
func tagList(tags map[string]string, owner string) string {
	var parts []string
	for k, v := range tags {
		if k != owner {
			parts = append(parts, k+"="+v)
		}
	}
	sort.Strings(parts)
	return orDash(strings.Join(parts, ","))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ago(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Local().Format("2006-01-02")
}
