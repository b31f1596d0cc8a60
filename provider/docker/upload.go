package docker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
)

// WriteFileFrom streams src into a file of a running sandbox through "keeper
// put -framed", run as the sandbox's user: data frames as src gives them,
// then the end frame, on which the keeper renames its temporary file over
// the target. A src that fails or a ctx that ends first closes the exec's
// stdin without the end frame: the keeper removes the temporary file and the
// target stays as it was. At most one frame is held at a time.
func (p *Provider) WriteFileFrom(ctx context.Context, sandboxID, filePath string, mode *uint32, src io.Reader) (int64, error) {
	target, err := p.sandboxTarget(ctx, sandboxID, filePath, "write_file")
	if err != nil {
		return 0, err
	}
	if target == "/" {
		return 0, protocol.ReasonError(protocol.ReasonIsDirectory, protocol.FieldPath, "write_file "+filePath+": is a directory", nil)
	}
	args := []string{keeperproto.CmdPut, "-framed"}
	if mode != nil {
		args = append(args, "-mode", strconv.FormatUint(uint64(*mode&0o777), 8))
	}
	run, err := p.sandboxKeeper(ctx, sandboxID, true, append(args, "--", target)...)
	if err != nil {
		return 0, err
	}
	defer run.Close()
	run.headerRead() // the answer comes after the data, however long it takes
	if err := sendFrames(ctx, run, src); err != nil {
		if errors.Is(err, errUploadRefused) {
			// The keeper refused before reading it all: its answer says why.
			if h, herr := readHeader(run); herr == nil && h.Error != "" {
				return 0, keeperFailure("write_file", filePath, h)
			}
		}
		// Closing stdin without the end frame is the keeper's signal to
		// leave nothing; wait for its answer so nothing is left when we
		// return.
		_ = run.hijack.CloseWrite()
		_, _ = io.Copy(io.Discard, run.stdout)
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, err
	}
	h, err := readHeader(run)
	if err != nil {
		return 0, run.failure("write_file", err)
	}
	if h.Error != "" {
		return 0, keeperFailure("write_file", filePath, h)
	}
	return h.Size, nil
}

var errUploadRefused = errors.New("the keeper stopped reading the upload")

// sendFrames copies src as data frames, then the end frame. Frames are
// gathered into large writes: each write to the exec's stdin is a trip
// through the engine's copy loop.
func sendFrames(ctx context.Context, run *helperRun, src io.Reader) error {
	out := bufio.NewWriterSize(run.hijack.Conn, 256<<10)
	buf := make([]byte, keeperproto.MaxFramePayload)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, rerr := src.Read(buf)
		if n > 0 {
			if err := keeperproto.WriteFrame(out, keeperproto.FrameData, buf[:n]); err != nil {
				return errUploadRefused
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	if err := keeperproto.WriteFrame(out, keeperproto.FrameEOF, nil); err != nil {
		return errUploadRefused
	}
	if err := out.Flush(); err != nil {
		return errUploadRefused
	}
	return run.hijack.CloseWrite()
}

func readHeader(run *helperRun) (keeperproto.Header, error) {
	var h keeperproto.Header
	line, err := run.stdout.ReadSlice('\n')
	if err == nil {
		err = json.Unmarshal(line, &h)
	}
	return h, err
}
