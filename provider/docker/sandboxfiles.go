package docker

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/internal/keeper"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider/keeperexec"
)

// The files of a running sandbox are read, listed and uploaded by the keeper
// run in it with docker exec as the sandbox's user ("keeper cat|ls
// -sandbox", "keeper put -framed"): its permissions are the check, as for a
// command of the sandbox, and the path is the sandbox's own. Not the
// engine's archive API, which reads and writes as the engine's root, past
// every permission. The channel (issue 12) will carry these; until then an
// exec per call.

// sandboxTarget checks that the sandbox runs and resolves path in it: a
// relative one in the work directory, an absolute one from the root.
func (p *Provider) sandboxTarget(ctx context.Context, sandboxID, filePath, op string) (string, error) {
	c, err := p.inspectSandbox(ctx, sandboxID)
	if err != nil {
		return "", err
	}
	if err := p.checkRunning(sandboxID, c); err != nil {
		return "", err
	}
	if strings.ContainsRune(filePath, 0) {
		return "", protocol.Errorf(protocol.KindInvalidRequest, "%s: path must not contain NUL", op)
	}
	if path.IsAbs(filePath) {
		return path.Clean(filePath), nil
	}
	return path.Join("/", workdirOf(c), filePath), nil
}

// sandboxKeeper starts one keeper command in a running sandbox and returns
// its output as a helperRun (the store helper's reader, header bound and
// failure words apply). The exec ends when the run is closed or ctx ends.
func (p *Provider) sandboxKeeper(ctx context.Context, sandboxID string, stdin bool, args ...string) (*helperRun, error) {
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	created, err := p.cli.ExecCreate(cctx, sandboxID, client.ExecCreateOptions{
		Cmd: keeper.Command(args...), AttachStdin: stdin, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return nil, p.execCreateFailed(ctx, cctx, sandboxID, err)
	}
	att, err := p.cli.ExecAttach(cctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, classify(cctx, "keeper "+args[0], err)
	}
	run := &helperRun{id: created.ID, hijack: att.HijackedResponse, stderr: &lockedBuffer{}, done: make(chan struct{})}
	pr, pw := io.Pipe()
	run.stdout = bufio.NewReaderSize(pr, keeperproto.MaxStatusLine)
	go func() {
		defer close(run.done)
		_, err := stdcopy.StdCopy(pw, run.stderr, att.Reader)
		pw.CloseWithError(err)
	}()
	release := sync.OnceFunc(func() {
		att.Close()
		pr.Close()
		<-run.done
	})
	stop := context.AfterFunc(ctx, release)
	run.headerTimer = time.AfterFunc(p.timing.api, func() {
		run.headerLate.Store(true)
		release()
	})
	run.close = func() {
		stop()
		run.headerTimer.Stop()
		release()
	}
	return run, nil
}

// keeperFailure is a keeper's error reply as the protocol's error, with
// its reason when it has one.
func keeperFailure(op, filePath string, h keeperproto.Header) error {
	msg := op + " " + filePath + ": " + h.Error
	if reason := protocol.Reason(h.Reason); reason.Known() {
		return protocol.ReasonError(reason, protocol.FieldPath, msg, nil)
	}
	kind := protocol.Kind(h.Kind)
	if kind != protocol.KindNotFound {
		kind = protocol.KindInvalidRequest
	}
	return &protocol.Error{Kind: kind, Msg: msg}
}

// ReadSandboxFile streams a regular file of a running sandbox.
func (p *Provider) ReadSandboxFile(ctx context.Context, sandboxID, filePath string) (io.ReadCloser, error) {
	if conn, abs, user, ok, err := p.fileChannel(ctx, sandboxID, filePath, "read_file"); err != nil || ok {
		if err != nil {
			return nil, err
		}
		rc, err := conn.ReadFile(ctx, abs, user)
		if err != nil {
			return nil, keeperexec.FileError("read_file", filePath, err)
		}
		return p.readOverArchive(ctx, sandboxID, rc), nil
	}
	target, err := p.sandboxTarget(ctx, sandboxID, filePath, "read_file")
	if err != nil {
		return nil, err
	}
	run, err := p.sandboxKeeper(ctx, sandboxID, false, keeperproto.CmdCat, "-sandbox", "--", target)
	if err != nil {
		return nil, err
	}
	h, err := readHeader(run)
	run.headerRead()
	if err != nil {
		run.Close()
		return nil, run.failure("read_file", err)
	}
	if h.Error != "" {
		run.Close()
		return nil, keeperFailure("read_file", filePath, h)
	}
	return &sizedReader{run: run, left: h.Size}, nil
}

// ListSandboxDir lists a directory of a running sandbox in directory order.
func (p *Provider) ListSandboxDir(ctx context.Context, sandboxID, dirPath string, limit int) ([]protocol.DirEntry, bool, error) {
	if limit <= 0 {
		limit = 1000
	}
	ctx, cancel := p.callCtx(ctx) // one bound for the whole call
	defer cancel()
	if conn, abs, user, ok, err := p.fileChannel(ctx, sandboxID, dirPath, "list_dir"); err != nil || ok {
		if err != nil {
			return nil, false, err
		}
		return listOverChannel(ctx, conn, abs, user, dirPath, limit)
	}
	target, err := p.sandboxTarget(ctx, sandboxID, dirPath, "list_dir")
	if err != nil {
		return nil, false, err
	}
	run, err := p.sandboxKeeper(ctx, sandboxID, false, keeperproto.CmdLs, "-sandbox", "-limit", strconv.Itoa(limit), "--", target)
	if err != nil {
		return nil, false, err
	}
	defer run.Close()
	var h keeperproto.Header
	err = json.NewDecoder(io.LimitReader(run.stdout, maxListing)).Decode(&h)
	run.headerRead()
	if err != nil {
		return nil, false, run.failure("list_dir", err)
	}
	if h.Error != "" {
		return nil, false, keeperFailure("list_dir", dirPath, h)
	}
	entries := make([]protocol.DirEntry, 0, len(h.Entries))
	for _, e := range h.Entries {
		entries = append(entries, protocol.DirEntry{Name: e.Name, Type: e.Type, Size: e.Size, Mtime: time.Unix(0, e.MtimeNS).UTC()})
	}
	return entries, h.Truncated, nil
}
