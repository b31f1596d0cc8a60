package docker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"time"

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
	if conn, abs, user, ok, err := p.fileChannel(ctx, sandboxID, filePath, "write_file"); err != nil || ok {
		if err != nil {
			return 0, err
		}
		if n, ok, err := p.writeOverArchive(ctx, sandboxID, conn, abs, user, filePath, mode, src); err != nil || ok {
			return n, err
		}
		return p.writeOverChannel(ctx, conn, abs, user, filePath, mode, src)
	}
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
	h, err := sendAndAwaitAnswer(ctx, run, src)
	if err != nil {
		return 0, err
	}
	if h.Error != "" {
		return 0, keeperFailure("write_file", filePath, h)
	}
	return h.Size, nil
}

// sendAndAwaitAnswer streams src to a keeper put and returns its answer.
// The answer is read while the data goes out: a keeper that refuses before
// reading (a directory at the path, a denied parent) answers and exits,
// and an engine need not close the exec's stdin then, so a writer that
// waited for its writes to fail could wait for good once the socket's
// buffers are full. An early refusal cuts the writes off instead.
func sendAndAwaitAnswer(ctx context.Context, run *helperRun, src io.Reader) (keeperproto.Header, error) {
	type answer struct {
		h   keeperproto.Header
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		h, err := readHeader(run)
		answered <- answer{h, err}
	}()
	sent := make(chan error, 1)
	go func() { sent <- sendFrames(ctx, run, src) }()
	var a answer
	select {
	case err := <-sent:
		if err != nil {
			// Stdin closed without the end frame is the keeper's signal
			// to leave nothing; its answer says it has.
			_ = run.hijack.CloseWrite()
		}
		a = <-answered
		// The keeper's refusal explains writes it stopped taking; any
		// other failure is the upload's own.
		if err != nil && (!errors.Is(err, errUploadRefused) || a.err != nil || a.h.Error == "") {
			if ctx.Err() != nil {
				return keeperproto.Header{}, ctx.Err()
			}
			return keeperproto.Header{}, err
		}
	case a = <-answered:
		if a.err == nil && a.h.Error == "" {
			// A keeper answers success only after the end frame: the
			// writer is at its last step.
			if err := <-sent; err != nil {
				return keeperproto.Header{}, err
			}
			return a.h, nil
		}
		// A refusal before the data was all out (or a broken stream):
		// cut the writer off and wait for it, so src is no longer read
		// once this returns.
		_ = run.hijack.Conn.SetWriteDeadline(time.Unix(1, 0))
		<-sent
	}
	if a.err != nil {
		return keeperproto.Header{}, run.failure("write_file", a.err)
	}
	return a.h, nil
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
