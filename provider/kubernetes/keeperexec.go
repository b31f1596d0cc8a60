package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"k8s.io/client-go/tools/remotecommand"

	"github.com/resident-dev/resident/internal/keeper"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
)

// runKeeper runs one short keeper command in a sandbox with input on its
// stdin and returns its stdout (at most 1 MiB is kept): the kill fallback,
// the OOM counter and write_file use it.
func (p *Provider) runKeeper(ctx context.Context, sandboxID string, input []byte, args ...string) (string, error) {
	out, err := p.runKeeperIn(ctx, sandboxID, containerSandbox, input, args...)
	if err != nil {
		return "", p.explainExecFailure(ctx, sandboxID, err)
	}
	return out, nil
}

// runKeeperIn runs a short keeper command in any pod's container.
func (p *Provider) runKeeperIn(ctx context.Context, podName, container string, input []byte, args ...string) (string, error) {
	what := "keeper " + args[0]
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	exec, err := p.executor(podName, container, keeper.Command(args...), false)
	if err != nil {
		return "", classify(cctx, what, err)
	}
	var out, errOut limitedBuffer
	err = exec.StreamWithContext(cctx, remotecommand.StreamOptions{Stdin: bytes.NewReader(input), Stdout: &out, Stderr: &errOut})
	if _, ok := exitCode(err); !ok {
		return "", classify(cctx, what, fmt.Errorf("%w (%s)", err, strings.TrimSpace(errOut.String())))
	}
	return out.String(), nil
}

// runKeeperHeader runs a keeper command that answers with one Header line.
func (p *Provider) runKeeperHeader(ctx context.Context, podName, container string, input []byte, args ...string) (keeperproto.Header, error) {
	out, err := p.runKeeperIn(ctx, podName, container, input, args...)
	if err != nil && container == containerSandbox {
		err = p.explainExecFailure(ctx, podName, err)
	}
	if err != nil {
		return keeperproto.Header{}, err
	}
	var h keeperproto.Header
	line, _, _ := strings.Cut(out, "\n")
	if err := json.Unmarshal([]byte(line), &h); err != nil {
		return keeperproto.Header{}, protocol.Errorf(protocol.KindTransient, "keeper %s: unreadable answer %q", args[0], line)
	}
	return h, nil
}

// limitedBuffer keeps the first MiB written to it; safe for concurrent use.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := 1<<20 - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
