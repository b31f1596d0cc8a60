package resident

import (
	"context"

	"github.com/resident-dev/resident/protocol"
)

// method is one entry of the dispatch table.
type method struct {
	serve func(ctx context.Context, s *session, c *call) (any, error)
	// routed methods have their sandbox_id / exec_id read on the read loop.
	routed bool
	// orderKey, when set, names the queue this request waits its turn in:
	// requests with the same key run one at a time in arrival order.
	orderKey func(route) string
}

// handle adapts a typed handler: strict param decoding happens here once, so
// each handler starts from a validated struct.
func handle[P any, R any](fn func(ctx context.Context, s *session, c *call, p *P) (R, error)) func(context.Context, *session, *call) (any, error) {
	return func(ctx context.Context, s *session, c *call) (any, error) {
		var p P
		if err := protocol.DecodeParams(c.params, &p); err != nil {
			return nil, err
		}
		return fn(ctx, s, c, &p)
	}
}

func bySandbox(r route) string { return "sandbox:" + r.SandboxID }
func byExec(r route) string    { return "exec:" + r.ExecID }

var methods map[string]method

func init() {
	methods = map[string]method{
		protocol.MethodInitialize:    {serve: handle(initialize)},
		protocol.MethodShutdown:      {serve: handle(shutdownRequest)},
		protocol.MethodSandboxCreate: {serve: handle(createSandbox)},
		protocol.MethodSandboxExec:   {serve: handle(execute), routed: true},
		protocol.MethodExecStdin:     {serve: handle(execStdin), routed: true, orderKey: byExec},
		protocol.MethodExecKill:      {serve: handle(execKill), routed: true},
		protocol.MethodSandboxWrite:  {serve: handle(writeFile), routed: true, orderKey: bySandbox},
		protocol.MethodSandboxList:   {serve: handle(listOwned)},
		protocol.MethodSandboxOwner:  {serve: handle(readOwner), routed: true},
		protocol.MethodSandboxTerm:   {serve: handle(terminate), routed: true, orderKey: bySandbox},
		protocol.MethodStoreVolumes:  {serve: handle(listVolumes)},
		protocol.MethodStoreListDir:  {serve: handle(listDir)},
		protocol.MethodStoreReadFile: {serve: handle(readFile)},
	}
}
