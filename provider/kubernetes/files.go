package kubernetes

import (
	"context"
	"path"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
)

// WriteFile puts a file into a running sandbox through the keeper ("keeper
// put"), as the container's user with its capabilities (none but the
// keeper's, which put drops): the write is one a command of the sandbox
// could make, or it is refused. A relative path is taken in the
// container's working directory (the keeper's, where a pod's exec starts),
// an absolute one from the root.
func (p *Provider) WriteFile(ctx context.Context, sandboxID, filePath string, data []byte, mode *uint32) error {
	ctx, cancel := p.callCtx(ctx)
	defer cancel()
	if p.channel {
		if served, err := p.writeFileChannel(ctx, sandboxID, filePath, data, mode); served {
			return err
		}
	}
	pod, err := p.getSandbox(ctx, sandboxID)
	if err != nil {
		return err
	}
	if err := p.checkRunning(pod); err != nil {
		return err
	}
	if strings.ContainsRune(filePath, 0) {
		return protocol.Errorf(protocol.KindInvalidRequest, "write_file: path must not contain NUL")
	}
	target := path.Join("/", filePath)
	if !path.IsAbs(filePath) {
		workdir := ""
		for _, c := range pod.Spec.Containers {
			if c.Name == containerSandbox {
				workdir = c.WorkingDir
			}
		}
		target = path.Clean(filePath)
		if workdir != "" {
			target = path.Join("/", workdir, filePath)
		}
	}
	if target == "/" || target == "." {
		return protocol.Errorf(protocol.KindInvalidRequest, "write_file %q: is a directory", filePath)
	}
	args := []string{keeperproto.CmdPut}
	if mode != nil {
		args = append(args, "-mode", strconv.FormatUint(uint64(*mode&0o777), 8))
	}
	h, err := p.runKeeperHeader(ctx, sandboxID, containerSandbox, data, append(args, "--", target)...)
	if err != nil {
		return err
	}
	if h.Error != "" {
		kind := protocol.Kind(h.Kind)
		if kind != protocol.KindNotFound {
			kind = protocol.KindInvalidRequest
		}
		return protocol.Errorf(kind, "write_file %q: %s", filePath, h.Error)
	}
	return nil
}

func nameField(name string) zap.Field { return zap.String("name", name) }

func errField(err error) zap.Field { return zap.Error(err) }
