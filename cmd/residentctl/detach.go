package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/resident-dev/resident/client"
	"github.com/resident-dev/resident/protocol"
)

// cmdAttach follows a detached exec (one started with exec -d) from any
// later residentctl: its kept output, then live output, and its exit code.
// Ctrl-C detaches; the exec goes on.
func cmdAttach(ctx context.Context, g *globals, stdio stdio, args []string) int {
	fs := g.flags("attach", stdio)
	offset := fs.Int64("offset", 0, "start at this byte of the exec's output (0: all that is kept)")
	stdin := fs.Bool("i", false, "forward residentctl's stdin to the exec (it must have been started with -i)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return usageExit(fs, stdio, err)
	}
	if len(pos) != 2 {
		return usageError(stdio, "attach", fmt.Errorf("usage: residentctl attach ID EXEC_ID [--offset N] [-i]"))
	}
	s, err := g.connect(ctx, stdio)
	if err != nil {
		return report(stdio, g, "attach", err, exitRunFailure)
	}
	defer s.close()
	streams := client.Streams{Stdout: stdio.out, Stderr: stdio.err}
	if *stdin {
		streams.Stdin = stdio.in
	}
	if pos[0], err = s.resolveID(ctx, pos[0]); err != nil {
		return report(stdio, g, "attach", err, exitRunFailure)
	}
	res, err := s.AttachExec(ctx, protocol.ExecAttachParams{SandboxID: pos[0], ExecID: pos[1], Offset: *offset}, streams)
	if errors.Is(err, context.Canceled) || client.KindOf(err) == protocol.KindCancelled {
		fmt.Fprintf(stdio.err, "residentctl: detached from %s; it goes on (residentctl attach %s %s)\n", pos[1], pos[0], pos[1])
		return exitInterrupted
	}
	if err != nil {
		return report(stdio, g, "attach", err, exitRunFailure)
	}
	if res.OutputLost > 0 {
		fmt.Fprintf(stdio.err, "residentctl: attach: %d bytes of output were older than what the sandbox keeps\n", res.OutputLost)
	}
	return res.ExitCode
}

// cmdExecs lists a sandbox's detached execs.
func cmdExecs(ctx context.Context, g *globals, stdio stdio, args []string) int {
	fs := g.flags("execs", stdio)
	asJSON := fs.Bool("json", false, "print the execs as a JSON array (the protocol's ExecInfo objects)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return usageExit(fs, stdio, err)
	}
	if len(pos) != 1 {
		return usageError(stdio, "execs", fmt.Errorf("usage: residentctl execs ID [--json]"))
	}
	s, err := g.connect(ctx, stdio)
	if err != nil {
		return report(stdio, g, "execs", err, exitFailure)
	}
	defer s.close()
	if pos[0], err = s.resolveID(ctx, pos[0]); err != nil {
		return report(stdio, g, "execs", err, exitFailure)
	}
	execs, err := s.ListExecs(ctx, pos[0])
	if err != nil {
		return report(stdio, g, "execs", err, exitFailure)
	}
	if *asJSON {
		return printJSON(stdio, execs)
	}
	tw := tabwriter.NewWriter(stdio.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EXEC ID\tSTATE\tSTARTED\tOUTPUT\tCOMMAND")
	for _, e := range execs {
		state := "running"
		if !e.Running && e.ExitCode != nil {
			state = "exited " + strconv.Itoa(*e.ExitCode)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", e.ExecID, state, e.StartedAt, e.NextOffset, shellWords(e.Argv))
	}
	_ = tw.Flush()
	return 0
}

// startDetached is exec -d: start, print the exec id, return. The id must
// be unique in the sandbox across every residentctl run, so it is random
// unless --id names it.
func startDetached(ctx context.Context, s *session, g *globals, stdio stdio, p protocol.ExecParams, id string) int {
	if p.ExecID = id; id == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		p.ExecID = "job-" + hex.EncodeToString(b[:])
	}
	res, err := s.StartExec(ctx, p)
	if err != nil {
		return report(stdio, g, "exec", err, exitRunFailure)
	}
	fmt.Fprintln(stdio.out, res.ExecID)
	return 0
}

func registerDetach(fs *flag.FlagSet, detach *bool, id *string) {
	fs.BoolVar(detach, "d", false, "start the command detached and print its exec id: it outlives residentctl; follow it with residentctl attach")
	fs.StringVar(id, "id", "", "with -d, the exec id to start it under (default: a random job-… id)")
}

// shellWords shows argv as a shell would take it back, quoting what needs it.
func shellWords(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			a = strconv.Quote(a)
		}
		words[i] = a
	}
	return strings.Join(words, " ")
}
