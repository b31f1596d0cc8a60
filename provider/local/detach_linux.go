//go:build linux

package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/keeperexec"
)

var _ provider.Detacher = (*Provider)(nil)

// Detached execs are the keeper's: it holds them, their output ring and
// their exit status whatever happens to the channel or the resident, so
// they need a sandbox init, which only an isolated sandbox has.

// StartDetached starts req as the detached exec req.ID; ctx bounds the
// start only.
func (p *Provider) StartDetached(ctx context.Context, sandboxID string, req provider.ExecRequest) error {
	if err := p.Start(); err != nil {
		return err
	}
	if !p.isolated() {
		return errUnisolatedDetach
	}
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return protocol.Errorf(protocol.KindInvalidRequest, "exec: argv must not be empty")
	}
	m, err := p.lookup(sandboxID)
	if err != nil {
		return err
	}
	si, conn, err := p.channelFor(ctx, sandboxID, m)
	if err != nil {
		return p.goneOr(sandboxID, initError(err))
	}
	if req.Exclusive && !conn.Protected() {
		return protocol.Errorf(protocol.KindInvalidRequest, "exec exclusive: the sandbox's keeper runs unprotected here (the resident is not root), so it cannot stop every other process of the sandbox")
	}
	spec := execSpec(m, req)
	spec.Detach, spec.ID, spec.Deadline, spec.Buffer = true, req.ID, req.Deadline, keeperproto.DefaultRing
	if req.Stdin {
		// The keeper does not say on attach whether an exec reads stdin;
		// the sandbox's private directory remembers, for any resident.
		if err := p.markStdin(sandboxID, req.ID); err != nil {
			return err
		}
	}
	e, err := conn.Exec(ctx, spec)
	if err != nil {
		return p.goneOr(sandboxID, p.execStartError(m, si, err))
	}
	_ = e.Release() // the exec goes on; an Attach reads it
	return nil
}

// stdinMarks is where the sandbox's private directory notes the detached
// execs that have stdin, by a digest of their id (any string the host
// chose, not a file name).
const stdinMarks = "detached-stdin"

func (p *Provider) stdinMark(sandboxID, execID string) string {
	sum := sha256.Sum256([]byte(execID))
	return filepath.Join(p.sandboxDir(sandboxID), stdinMarks, hex.EncodeToString(sum[:]))
}

func (p *Provider) markStdin(sandboxID, execID string) error {
	mark := p.stdinMark(sandboxID, execID)
	if err := os.MkdirAll(filepath.Dir(mark), 0o700); err != nil {
		return p.goneOr(sandboxID, err)
	}
	return p.goneOr(sandboxID, os.WriteFile(mark, nil, 0o600))
}

func (p *Provider) hasStdin(sandboxID, execID string) bool {
	_, err := os.Stat(p.stdinMark(sandboxID, execID))
	return err == nil
}

// Attach streams a detached exec's output from offset.
func (p *Provider) Attach(ctx context.Context, sandboxID, execID string, offset int64) (provider.Attachment, error) {
	conn, err := p.detachChannel(ctx, sandboxID)
	if err != nil {
		return nil, err
	}
	e, info, err := conn.Attach(ctx, execID, offset)
	if err != nil {
		return nil, p.goneOr(sandboxID, keeperexec.DetachError(execID, err))
	}
	return keeperexec.NewAttachment(e, info, offset, p.hasStdin(sandboxID, execID)), nil
}

// ListExecs lists the sandbox's detached execs, running or ended.
func (p *Provider) ListExecs(ctx context.Context, sandboxID string) ([]protocol.ExecInfo, error) {
	conn, err := p.detachChannel(ctx, sandboxID)
	if err != nil {
		return nil, err
	}
	execs, err := conn.ListExecs(ctx)
	if err != nil {
		return nil, p.goneOr(sandboxID, keeperexec.DetachError("", err))
	}
	return keeperexec.ExecInfos(execs), nil
}

// KillExec kills a detached exec's whole tree.
func (p *Provider) KillExec(ctx context.Context, sandboxID, execID string) error {
	conn, err := p.detachChannel(ctx, sandboxID)
	if err != nil {
		return err
	}
	return p.goneOr(sandboxID, keeperexec.DetachError(execID, conn.KillExec(ctx, execID)))
}

// detachChannel is the channel of a sandbox whose detached execs are
// asked about. An expired sandbox has none left: its keeper ended.
func (p *Provider) detachChannel(ctx context.Context, sandboxID string) (*channel.Conn, error) {
	if err := p.Start(); err != nil {
		return nil, err
	}
	if !p.isolated() {
		return nil, errUnisolatedDetach
	}
	m, err := p.lookup(sandboxID)
	if err != nil {
		return nil, err
	}
	_, conn, err := p.channelFor(ctx, sandboxID, m)
	if err != nil {
		return nil, p.goneOr(sandboxID, initError(err))
	}
	return conn, nil
}

var errUnisolatedDetach = protocol.Errorf(protocol.KindInvalidRequest,
	"exec detach: local runs execs unisolated here (no working bwrap), so no keeper can hold a detached exec; install %s", bwrapPackage)
