package channel

import (
	"context"
	"errors"
	"io"
	"time"

	"go.uber.org/zap"
)

var errUnimplemented = errors.New("keeper channel: unimplemented")

// DefaultWindow is the per-stream credit when Options.Window is 0.
const DefaultWindow = 256 << 10

// Options configure a Conn.
type Options struct {
	// Logger gets the channel's own events (takeover, fence, resyncs);
	// nil for none.
	Logger *zap.Logger
	// Window is the credit, in bytes, this side grants each stream's
	// output: how much the keeper may send before the reader consumes it.
	Window int
}

// Conn is one holder's channel to one keeper.
type Conn struct{}

// Open takes the channel over rw: a hello that takes over (the keeper
// bumps its lease generation; frames of any older generation are refused
// from then on and their sender is told it was fenced) and learns what the
// keeper supports. It returns once the keeper welcomed it, or ctx ended.
// The Conn owns rw from then on and closes it on Close or when it breaks.
func Open(ctx context.Context, rw io.ReadWriteCloser, o Options) (*Conn, error) {
	return nil, errUnimplemented
}

// Generation is the lease generation this Conn holds.
func (c *Conn) Generation() uint64 { return 0 }

// Protected reports whether the keeper runs protected (its own uid,
// non-dumpable, execs marked); false when it was not started as root.
func (c *Conn) Protected() bool { return false }

// Supports reports whether the keeper announced a feature
// (keeperproto.Feature*).
func (c *Conn) Supports(feature string) bool { return false }

// Done is closed when the channel broke or was closed.
func (c *Conn) Done() <-chan struct{} { return nil }

// Err is why Done closed (ErrBroken or ErrFenced, wrapping the cause);
// nil while the channel works.
func (c *Conn) Err() error { return errUnimplemented }

// Close ends the channel: non-detached execs die with it (the keeper kills
// their trees), detached ones go on.
func (c *Conn) Close() error { return nil }

// WindowSize is a terminal's size.
type WindowSize struct{ Rows, Cols uint16 }

// ExecSpec is one command to run in the sandbox.
type ExecSpec struct {
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

// Exec starts s and returns once it runs, or with a *StartError saying why
// it cannot, or ErrBroken.
func (c *Conn) Exec(ctx context.Context, s ExecSpec) (*Exec, error) {
	return nil, errUnimplemented
}

// Attach streams a detached exec's output from offset (bytes over stdout
// and stderr together since it started): the kept part first, then live,
// then its exit status. An offset older than the ring holds starts at the
// oldest byte kept (AttachInfo.Offset says where). ErrUnknownExec for an
// id the keeper does not hold.
func (c *Conn) Attach(ctx context.Context, execID string, offset int64) (*Exec, AttachInfo, error) {
	return nil, AttachInfo{}, errUnimplemented
}

// AttachInfo is where an Attach starts.
type AttachInfo struct {
	Offset  int64 // the first byte that will be replayed
	End     int64 // bytes produced so far
	Buffer  int64 // the ring's size
	Dropped int64 // bytes the ring let go before anyone read them
	Running bool
	Exit    *ExitStatus
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

// ListExecs lists the keeper's detached execs, running or ended.
func (c *Conn) ListExecs(ctx context.Context) ([]ExecInfo, error) {
	return nil, errUnimplemented
}

// Entry is one directory entry.
type Entry struct {
	Name  string
	Type  string // "file", "dir", "symlink", "other"
	Size  int64
	Mtime time.Time
}

// WriteFile writes r's bytes to path as user, atomically: a temporary file
// beside it, renamed into place once all of r is in; a failed or cancelled
// write leaves nothing. Missing parents are made 0755. mode nil: a new file
// is 0644, an existing one keeps its mode. A *FileError says why not.
func (c *Conn) WriteFile(ctx context.Context, path string, mode *uint32, user string, r io.Reader) error {
	return errUnimplemented
}

// ReadFile streams path's bytes, read as user. The reader's Size method
// (see File) tells the size announced at open.
func (c *Conn) ReadFile(ctx context.Context, path, user string) (io.ReadCloser, error) {
	return nil, errUnimplemented
}

// File is what ReadFile returns.
type File interface {
	io.ReadCloser
	Size() int64
}

// ListDir lists at most limit entries of path as user, and whether there
// are more.
func (c *Conn) ListDir(ctx context.Context, path, user string, limit int) ([]Entry, bool, error) {
	return nil, false, errUnimplemented
}
