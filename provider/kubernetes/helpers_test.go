package kubernetes

import (
	"context"
	"io"
	"strings"
	"sync"

	"github.com/resident-dev/resident/provider"
)

// run execs argv and returns its stdout and exit status.
func run(ctx context.Context, p *Provider, id string, argv ...string) (string, provider.ExitStatus, error) {
	proc, err := p.Exec(ctx, id, provider.ExecRequest{Argv: argv})
	if err != nil {
		return "", provider.ExitStatus{}, err
	}
	var out strings.Builder
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = io.Copy(&out, proc.Stdout()) })
	wg.Go(func() { _, _ = io.Copy(io.Discard, proc.Stderr()) })
	st, err := proc.Wait()
	wg.Wait()
	return out.String(), st, err
}

// drain reads a process's output to its end.
func drain(proc provider.Process) {
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = io.Copy(io.Discard, proc.Stdout()) })
	wg.Go(func() { _, _ = io.Copy(io.Discard, proc.Stderr()) })
	wg.Wait()
}

// testOwner is an owner of its own for one test.
func testOwner(prefix string) provider.Owner {
	return provider.Owner{Key: "resident-install-id", InstallID: prefix + "-" + newID()[len(idPrefix):]}
}
