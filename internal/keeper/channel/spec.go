package channel

import (
	"io"
	"time"
)

// WindowSize is a terminal's size.
type WindowSize struct{ Rows, Cols uint16 }

// ExecSpec is one command to run in the sandbox.
type ExecSpec struct {
	// ID names the exec, unique among the keeper's execs (one in use is a
	// *StartError with Kind conflict); empty for an id the keeper makes up.
	ID   string
	Argv []string
	// Env is the whole environment: the keeper adds nothing.
	Env []string
	// Cwd is the working directory; empty for the keeper's ("/").
	Cwd string
	// User is "", a name, a uid or uid:gid, resolved by the keeper in the
	// sandbox's /etc/passwd and /etc/group; "" runs as the keeper was
	// started (root, normally). A bare uid in neither file is fine.
	User string
	// TTY runs the command on a pseudo-terminal of this size: output on
	// Stdout only, Stdin open.
	TTY *WindowSize
	// Stdin opens the command's stdin (Exec.Stdin); without it (and without
	// TTY) stdin is /dev/null.
	Stdin bool
	// Exclusive kills every process of every other exec first.
	Exclusive bool
	// Deadline, unless zero, has the keeper kill the tree then.
	Deadline time.Time
	// Detach keeps the exec when the channel breaks or is taken over; its
	// output is kept in a ring of Buffer bytes (0: 1 MiB) for Attach.
	Detach bool
	Buffer int64
}

// AttachInfo is where an Attach starts.
type AttachInfo struct {
	Offset  int64 // the first byte that will be replayed
	End     int64 // bytes produced so far
	Buffer  int64 // the ring's size
	Dropped int64 // bytes the ring let go before anyone read them
	Running bool
	Exit    *ExitStatus
	// Stdin says the exec has a stdin (or a terminal): Exec.Stdin is nil
	// without one.
	Stdin bool
}

// ExecInfo describes one detached exec of the sandbox.
type ExecInfo struct {
	ID       string
	Argv     []string
	Started  time.Time
	Running  bool
	Exit     *ExitStatus
	End      int64 // bytes produced so far
	Buffered int64 // bytes kept in the ring
	Buffer   int64 // the ring's size
	Dropped  int64
}

// Entry is one directory entry.
type Entry struct {
	Name  string
	Type  string // "file", "dir", "symlink", "other"
	Size  int64
	Mtime time.Time
}

// File is what ReadFile returns: the bytes, and the size the keeper
// announced when it opened the file.
type File interface {
	io.ReadCloser
	Size() int64
}
