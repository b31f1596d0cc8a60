package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// The providers are the resident binary's to say (resident
// --list-providers), never a list kept here: a resident built with another
// set, or a newer one, is described as it is.

func cmdProviders(ctx context.Context, g *globals, io stdio, args []string) int {
	fs := g.flags("providers", io)
	if err := fs.Parse(args); err != nil {
		return usageExit(fs, io, err)
	}
	names, err := residentProviders(ctx, g)
	if err != nil {
		fmt.Fprintln(io.err, "residentctl providers:", err)
		return exitFailure
	}
	for _, name := range names {
		fmt.Fprintln(io.out, name)
	}
	return 0
}

// printProviders adds the resident's providers to the help, or says why it
// cannot.
func printProviders(g *globals, w io.Writer) {
	names, err := residentProviders(context.Background(), g)
	if err != nil {
		fmt.Fprintf(w, "\nproviders: unknown (%v)\n", err)
		return
	}
	fmt.Fprintf(w, "\nproviders (--provider): %s\n", strings.Join(names, ", "))
}

// residentProviders asks the resident binary which providers it can load.
func residentProviders(ctx context.Context, g *globals) ([]string, error) {
	bin, err := g.residentPath()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "--list-providers")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list-providers: %w (%s)", bin, err, strings.TrimSpace(stderr.String()))
	}
	return strings.Fields(string(out)), nil
}
