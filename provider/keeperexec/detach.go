package keeperexec

import (
	"errors"
	"io"
	"sync"
	"time"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// DetachError maps a detached exec's call (attach, list, kill) that
// failed: an exec the keeper does not know is not_found, the rest
// transient (the exec itself goes on).
func DetachError(execID string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, channel.ErrUnknownExec):
		return protocol.Errorf(protocol.KindNotFound, "exec %q not found", execID)
	case errors.Is(err, channel.ErrBroken):
		return &protocol.Error{Kind: protocol.KindTransient, Msg: "the sandbox's channel broke", Err: err}
	}
	return &protocol.Error{Kind: protocol.KindTransient, Msg: "detached exec", Err: err}
}

// ExecInfos are the keeper's detached execs as the protocol lists them.
func ExecInfos(execs []channel.ExecInfo) []protocol.ExecInfo {
	out := make([]protocol.ExecInfo, 0, len(execs))
	for _, x := range execs {
		info := protocol.ExecInfo{ExecID: x.ID, Argv: x.Argv, StartedAt: x.Started.UTC().Format(time.RFC3339),
			Running: x.Running, NextOffset: x.End, BufferedBytes: x.Buffered, DroppedBytes: x.Dropped}
		if x.Exit != nil {
			code := x.Exit.Code
			info.ExitCode, info.Signal = &code, x.Exit.Signal
		}
		out = append(out, info)
	}
	return out
}

// NewAttachment is one reader of a detached exec that Conn.Attach opened
// from offset. It has stdin when the keeper says the exec was started with
// it, or when the provider remembers so (stdin: for a keeper too old to
// say).
func NewAttachment(e *channel.Exec, info channel.AttachInfo, offset int64, stdin bool) provider.Attachment {
	return &attachment{exec: e, stdin: stdin || info.Stdin, next: info.Offset, info: provider.AttachInfo{Offset: info.Offset, Lost: max(info.Offset-offset, 0)}}
}

// attachment is one reader of a detached exec over the channel.
type attachment struct {
	exec  *channel.Exec
	stdin bool  // the exec was started with stdin
	next  int64 // the offset the next chunk must have, at least
	info  provider.AttachInfo

	once   sync.Once
	status provider.ExitStatus
	ended  bool
}

var _ provider.Attachment = (*attachment)(nil)

func (a *attachment) Next() (provider.OutputChunk, error) {
	c, err := a.exec.Next()
	if err == io.EOF {
		a.once.Do(func() {
			st, werr := a.exec.Wait()
			if werr == nil {
				a.status = provider.ExitStatus{Code: st.Code, Signal: st.Signal, OOMKilled: st.OOMKilled, Killed: st.Killed, TimedOut: st.TimedOut}
				a.ended = true
			}
		})
		return provider.OutputChunk{}, io.EOF
	}
	if err != nil {
		return provider.OutputChunk{}, DetachError(a.exec.ID(), err)
	}
	// Offsets only grow: a forward jump is output the ring let go, a
	// chunk numbered below the last one's end is the client's numbering
	// racing the replay's start (the client sets the replay's offset
	// after the first chunks may have come) and continues where the last
	// one ended.
	off := max(c.Offset, a.next)
	a.next = off + int64(len(c.Data))
	return provider.OutputChunk{Stream: c.Stream, Offset: off, Data: c.Data}, nil
}

func (a *attachment) Exit() (provider.ExitStatus, bool) { return a.status, a.ended }

func (a *attachment) Stdin() io.WriteCloser {
	if w := a.exec.Stdin(); w != nil && a.stdin {
		return w
	}
	return nil
}

func (a *attachment) Info() provider.AttachInfo { return a.info }

func (a *attachment) Close() error { return a.exec.Release() }
