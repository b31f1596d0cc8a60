package provider

import (
	"context"
	"io"

	"github.com/resident-dev/resident/protocol"
)

// Detacher is the optional ability to run execs that outlive the host and
// the resident (capability detach): an editor's terminal across a window
// reload, a harness's long build across a crash. The sandbox's supervisor
// (the keeper) holds them, so they need nothing of the resident that
// started them.
type Detacher interface {
	// StartDetached starts req as a detached exec named req.ID, unique
	// among the sandbox's detached execs (an id in use is conflict). ctx
	// bounds the start only: the exec keeps running when ctx ends, when the
	// provider's channel to the sandbox breaks and when the resident exits.
	// req.Deadline, unless zero, is enforced inside the sandbox.
	StartDetached(ctx context.Context, sandboxID string, req ExecRequest) error

	// Attach streams a detached exec's output from offset: what the
	// sandbox still keeps of it, then its live output, then its end. A
	// missing exec is not_found. ctx bounds the attach call, not the
	// stream: the stream ends with Close.
	Attach(ctx context.Context, sandboxID, execID string, offset int64) (Attachment, error)

	// ListExecs lists the sandbox's detached execs, running or ended.
	ListExecs(ctx context.Context, sandboxID string) ([]protocol.ExecInfo, error)

	// KillExec kills a detached exec's whole process tree; a running
	// attachment then ends with Killed. Killing an ended exec is a no-op;
	// a missing one is not_found.
	KillExec(ctx context.Context, sandboxID, execID string) error
}

// Attachment is one reader of a detached exec. One of an exec started with
// a terminal (ExecRequest.TTY) is also a Resizer.
type Attachment interface {
	// Next returns the exec's output in the order the sandbox saw it, one
	// chunk at a time, each with its stream and the offset of its first
	// byte; io.EOF once the exec ended and all of its output was returned
	// (Exit then says how it ended); another error when the channel to
	// the sandbox broke (the exec itself goes on).
	Next() (OutputChunk, error)
	// Exit is how the exec ended, once Next returned io.EOF.
	Exit() (ExitStatus, bool)
	// Stdin feeds the exec when it was started with stdin (or a terminal);
	// nil otherwise. Closing it closes the exec's stdin for every holder.
	Stdin() io.WriteCloser
	// Info says where the replay starts and what of the asked-for output
	// is no longer kept.
	Info() AttachInfo
	// Close detaches: Next returns promptly, the exec goes on.
	Close() error
}

// OutputChunk is a piece of a detached exec's output. Offset counts the
// exec's output bytes, both streams together, from its start.
type OutputChunk struct {
	Stream string // protocol.StreamStdout or protocol.StreamStderr
	Offset int64
	Data   []byte
}

// AttachInfo describes an attachment when it starts.
type AttachInfo struct {
	// Offset is where the replay starts: the asked-for offset, or the
	// oldest byte still kept when that is later.
	Offset int64
	// Lost counts the asked-for bytes no longer kept (Offset minus the
	// asked-for offset).
	Lost int64
}
