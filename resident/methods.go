package resident

import (
	"context"

	"github.com/resident-dev/resident/protocol"
)

// method is one entry of the dispatch table.
type method struct {
	// decode runs on the read loop: it turns the raw params into the
	// handler's typed params, so that nothing of the frame outlives it.
	decode func(raw []byte) (any, error)
	serve  func(ctx context.Context, s *session, c *call) (any, error)
	// routed methods have their sandbox_id / exec_id read on the read loop.
	routed bool
	// orderKey, when set, names the queue this request waits its turn in:
	// requests with the same key run one at a time in arrival order.
	orderKey func(route) string
	// kept, when set, reports the bytes of the decoded params the handler
	// keeps until it returns, and whether it may keep them for as long as a
	// process chooses (see hostBudget). Without it a request holds no
	// budget once decoded: its params are small and bounded by validation.
	kept func(params any) (n int64, waits bool)
}

// handle adapts a typed handler: strict param decoding happens here once, so
// each handler starts from a validated struct.
func handle[P any, R any](fn func(ctx context.Context, s *session, c *call, p *P) (R, error)) method {
	return method{
		decode: func(raw []byte) (any, error) {
			p := new(P)
			// raw is the params of a body ParseEnvelope validated.
			if err := protocol.DecodeValidParams(raw, p); err != nil {
				return nil, err
			}
			return p, nil
		},
		serve: func(ctx context.Context, s *session, c *call) (any, error) {
			return fn(ctx, s, c, c.params.(*P))
		},
	}
}

func (m method) routedBy(orderKey func(route) string) method {
	m.routed, m.orderKey = true, orderKey
	return m
}

func (m method) keeping(kept func(params any) (int64, bool)) method {
	m.kept = kept
	return m
}

func bySandbox(r route) string { return "sandbox:" + r.SandboxID }
func byExec(r route) string    { return "exec:" + r.ExecID }

// keptByExec: the exec's argv, env and ids stay referenced while it runs.
func keptByExec(params any) (int64, bool) {
	p := params.(*protocol.ExecParams)
	const header = 16 // a string's own words
	n := int64(len(p.SandboxID) + len(p.ExecID) + len(p.Cwd))
	for _, a := range p.Argv {
		n += header + int64(len(a))
	}
	for k, v := range p.Env {
		n += 2*header + int64(len(k)+len(v))
	}
	return n, true
}

// keptByStart: as an exec's, until the start answers.
func keptByStart(params any) (int64, bool) {
	n, _ := keptByExec(params)
	return n, false
}

// keptByStdin: the data waits until the process reads it.
func keptByStdin(params any) (int64, bool) {
	return int64(len(params.(*protocol.ExecStdinParams).Data)), true
}

// keptByWriteFile: the data is held while the provider writes it, which
// ends within the provider's own time bound.
func keptByWriteFile(params any) (int64, bool) {
	return int64(len(params.(*protocol.WriteFileParams).Data)), false
}

var methods map[string]method

func init() {
	methods = map[string]method{
		protocol.MethodInitialize:      handle(initialize),
		protocol.MethodShutdown:        handle(shutdownRequest),
		protocol.MethodSandboxCreate:   handle(createSandbox),
		protocol.MethodSandboxExec:     handle(execute).routedBy(nil).keeping(keptByExec),
		protocol.MethodExecStdin:       handle(execStdin).routedBy(byExec).keeping(keptByStdin),
		protocol.MethodExecKill:        handle(execKill).routedBy(nil),
		protocol.MethodExecStart:       handle(startExec).routedBy(nil).keeping(keptByStart),
		protocol.MethodExecAttach:      handle(attachExec).routedBy(nil),
		protocol.MethodSandboxExecs:    handle(listExecs).routedBy(nil),
		protocol.MethodSandboxWrite:    handle(writeFile).routedBy(byWrite).keeping(keptByWriteFile),
		protocol.MethodUploadData:      handle(uploadData).routedBy(byUpload).keeping(keptByUpload),
		protocol.MethodSandboxReadFile: handle(sandboxReadFile),
		protocol.MethodSandboxListDir:  handle(sandboxListDir),
		protocol.MethodExecResize:      handle(execResize).routedBy(byExec),
		protocol.MethodCreateVolume:    handle(createVolume),
		protocol.MethodDeleteVolume:    handle(deleteVolume),
		protocol.MethodSandboxWatch:    handle(watchSandboxes),
		protocol.MethodSandboxList:     handle(listOwned),
		protocol.MethodSandboxOwner:    handle(readOwner).routedBy(nil),
		protocol.MethodSandboxTerm:     handle(terminate).routedBy(bySandbox),
		protocol.MethodStoreVolumes:    handle(listVolumes),
		protocol.MethodStoreListDir:    handle(listDir),
		protocol.MethodStoreReadFile:   handle(readFile),
	}
}
