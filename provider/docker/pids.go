package docker

import (
	"context"
	"encoding/json"
	"io"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
)

// execPidsHeadroom is what starting one more exec takes from the sandbox's
// pids limit, threads included: the runtime's exec init and the keeper are
// Go programs of about 7 threads each, and the keeper keeps its threads for
// as long as the exec runs.
const execPidsHeadroom = 16

// pidsPerExec is what a running exec holds, measured: the keeper's
// threads and the command.
const pidsPerExec = 9

// pidsExhausted explains an exec that did not start because the sandbox
// has no room for another process. Without it the host sees the runtime's
// own words ("read init-p: connection reset by peer") or a keeper that
// died unable to make a thread, and cannot tell a full sandbox from a
// broken one. It returns nil when the limit is not the cause, or when the
// engine cannot say: the original error then stands.
func (p *Provider) pidsExhausted(ctx context.Context, sandboxID string) error {
	if ctx.Err() != nil {
		return nil
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	res, err := p.cli.ContainerStats(cctx, sandboxID, client.ContainerStatsOptions{})
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	var stats struct {
		Pids container.PidsStats `json:"pids_stats"`
	}
	if json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&stats) != nil {
		return nil
	}
	if stats.Pids.Limit == 0 || stats.Pids.Current+execPidsHeadroom <= stats.Pids.Limit {
		return nil
	}
	return protocol.Errorf(protocol.KindQuota,
		"exec: sandbox %s is at its process limit: %d of pids_limit %d in use (threads count: each running exec holds about %d, its keeper's threads and the command). Wait for an exec to end, or create the sandbox with a higher spec.pids_limit",
		sandboxID[:12], stats.Pids.Current, stats.Pids.Limit, pidsPerExec)
}
