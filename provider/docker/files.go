package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/internal/keeper"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
)

// WriteFile puts a file into a running sandbox through the keeper ("keeper
// put"), which runs as the container's user with the container's
// capabilities: the write is one a command of the sandbox could make, or it
// is refused (a read-only file, a directory that user cannot write, a
// read-only root outside its writable directories). The archive API is not
// used because it writes as the engine's root, past every permission, and
// stamps its own times. A relative path is taken in the work directory, an
// absolute one from the root; ".." is clamped at "/". A symlink on the path
// is followed inside the container, as that user's own open would.
func (p *Provider) WriteFile(ctx context.Context, sandboxID, filePath string, data []byte, mode *uint32) error {
	ctx, cancel := p.callCtx(ctx) // one bound for the whole call
	defer cancel()
	if conn, abs, user, ok, err := p.fileChannel(ctx, sandboxID, filePath, "write_file"); err != nil || ok {
		if err != nil {
			return err
		}
		return p.writeBytesOverChannel(ctx, conn, abs, user, filePath, data, mode)
	}
	c, err := p.inspectSandbox(ctx, sandboxID)
	if err != nil {
		return err
	}
	if err := p.checkRunning(sandboxID, c); err != nil {
		return err
	}
	if strings.ContainsRune(filePath, 0) {
		return protocol.Errorf(protocol.KindInvalidRequest, "write_file: path must not contain NUL")
	}
	target := path.Join("/", workdirOf(c), filePath)
	if path.IsAbs(filePath) {
		target = path.Join("/", filePath)
	}
	if target == "/" {
		return protocol.ReasonError(protocol.ReasonIsDirectory, protocol.FieldPath, "write_file "+filePath+": is a directory", nil)
	}
	args := []string{keeperproto.CmdPut}
	if mode != nil {
		args = append(args, "-mode", strconv.FormatUint(uint64(*mode&0o777), 8))
	}
	h, err := p.runKeeperWithInput(ctx, sandboxID, data, append(args, "--", target)...)
	if err != nil {
		return err
	}
	if h.Error != "" {
		return keeperFailure("write_file", filePath, h)
	}
	return nil
}

// workdirOf is the directory a relative path is taken in: the container's
// working directory (spec.workdir, else the image's), else the root.
func workdirOf(c container.InspectResponse) string {
	if c.Config != nil && c.Config.WorkingDir != "" {
		return c.Config.WorkingDir
	}
	return "/"
}

// runKeeperWithInput runs one keeper command that reads input on its stdin
// and answers with one Header line on stdout.
func (p *Provider) runKeeperWithInput(ctx context.Context, sandboxID string, input []byte, args ...string) (keeperproto.Header, error) {
	what := "keeper " + args[0]
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	created, err := p.cli.ExecCreate(cctx, sandboxID, client.ExecCreateOptions{
		Cmd: keeper.Command(args...), AttachStdin: true, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return keeperproto.Header{}, p.execCreateFailed(ctx, cctx, sandboxID, err)
	}
	att, err := p.cli.ExecAttach(cctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return keeperproto.Header{}, classify(cctx, what, err)
	}
	defer att.Close()
	stop := context.AfterFunc(cctx, att.Close)
	defer stop()
	writeErr := make(chan error, 1)
	go func() {
		_, err := io.Copy(att.Conn, bytes.NewReader(input))
		if err == nil {
			err = att.CloseWrite()
		}
		writeErr <- err
	}()
	var out, errOut lockedBuffer
	if _, err := stdcopy.StdCopy(&out, &errOut, io.LimitReader(att.Reader, 1<<20)); err != nil {
		return keeperproto.Header{}, classify(cctx, what, fmt.Errorf("%w (%s)", err, errOut.String()))
	}
	att.Close() // the keeper has answered: its stdin is no longer read
	inputErr := <-writeErr
	var h keeperproto.Header
	line, _, _ := strings.Cut(out.String(), "\n")
	if err := json.Unmarshal([]byte(line), &h); err != nil {
		if inputErr != nil {
			return keeperproto.Header{}, classify(cctx, what, inputErr)
		}
		return keeperproto.Header{}, fmt.Errorf("%s: unreadable answer %q (%s): %w", what, line, errOut.String(), err)
	}
	return h, nil
}
