package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/resident-dev/resident/client"
	"github.com/resident-dev/resident/protocol"
)

func cmdLs(ctx context.Context, g *globals, stdio stdio, args []string) int {
	fs := g.flags("ls", stdio)
	asJSON := fs.Bool("json", false, "print the sandboxes as a JSON array (the protocol's Sandbox objects)")
	if pos, err := parseInterleaved(fs, args); err != nil {
		return usageExit(err)
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

func cmdRm(ctx context.Context, g *globals, stdio stdio, args []string) int {
	fs := g.flags("rm", stdio)
	ids, err := parseInterleaved(fs, args)
	if err != nil {
		return usageExit(err)
	}
	if len(ids) == 0 {
		return usageError(stdio, "rm", fmt.Errorf("usage: residentctl rm ID..."))
	}
	s, err := g.connect(ctx, stdio)
	if err != nil {
		return report(stdio, g, "rm", err, exitFailure)
	}
	defer s.close()
	code := 0
	for _, id := range ids {
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

func cmdCp(ctx context.Context, g *globals, stdio stdio, args []string) int {
	fs := g.flags("cp", stdio)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return usageExit(err)
	}
	if len(pos) != 2 {
		return usageError(stdio, "cp", fmt.Errorf("usage: residentctl cp LOCAL ID:PATH (LOCAL - reads stdin)"))
	}
	id, path, ok := strings.Cut(pos[1], ":")
	if !ok || id == "" || path == "" {
		return usageError(stdio, "cp", fmt.Errorf("destination %q: want ID:PATH", pos[1]))
	}
	s, err := g.connect(ctx, stdio)
	if err != nil {
		return report(stdio, g, "cp", err, exitFailure)
	}
	defer s.close()
	data, mode, err := readLocal(pos[0], stdio.in, s.Info().Limits.MaxFileBytes)
	if err != nil {
		return report(stdio, g, "cp", err, exitFailure)
	}
	if _, err := s.WriteFile(ctx, protocol.WriteFileParams{SandboxID: id, Path: path, Data: data, Mode: mode}); err != nil {
		return report(stdio, g, "cp", err, exitFailure)
	}
	return 0
}

// readLocal reads a local file, or stdin for "-", with the file's
// permission bits (nil, the resident's 0644, for stdin). More than limit
// bytes is refused before it is read: the resident would refuse it anyway.
func readLocal(name string, stdin io.Reader, limit int64) ([]byte, *uint32, error) {
	tooBig := func() error {
		return fmt.Errorf("%s is over the resident's %d byte limit for one file: %w", name, limit, client.ErrQuota)
	}
	if name == "-" {
		data, err := io.ReadAll(io.LimitReader(stdin, limit+1))
		if int64(len(data)) > limit {
			return nil, nil, tooBig()
		}
		return data, nil, err
	}
	info, err := os.Stat(name)
	if err != nil {
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file", name)
	}
	if info.Size() > limit {
		return nil, nil, tooBig()
	}
	data, err := os.ReadFile(name)
	mode := uint32(info.Mode().Perm())
	return data, &mode, err
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
