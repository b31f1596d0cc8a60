package channel

import "io"

// ExitStatus is how an exec ended.
type ExitStatus struct {
	// Code is what a shell reports: the exit code, or 128+n for signal n.
	Code int
	// Signal names the signal that ended the command ("SIGKILL"), if one did.
	Signal string
	// OOMKilled: the kernel's OOM killer killed a process of the sandbox
	// while the command ran, and the command died of SIGKILL.
	OOMKilled bool
	// Killed: the keeper killed the tree (Kill, the deadline, an
	// exclusive exec, the channel that started it breaking).
	Killed bool
	// TimedOut: the deadline killed it (Killed is set too).
	TimedOut bool
}

// Exec is one running command (or a detached one attached to).
type Exec struct{}

// ID is the keeper's id for the exec (what Attach and ListExecs use).
func (e *Exec) ID() string { return "" }

// Stdout is the command's stdout (a TTY's whole output). Read it, and
// Stderr, or the exec stalls once its credit is spent.
func (e *Exec) Stdout() io.Reader { return nil }

// Stderr is the command's stderr; empty for a TTY. An attached exec's
// output keeps its order only across both readers together.
func (e *Exec) Stderr() io.Reader { return nil }

// Stdin is the command's stdin; nil unless ExecSpec.Stdin or TTY. Close
// sends EOF.
func (e *Exec) Stdin() io.WriteCloser { return nil }

// Signal sends a signal ("SIGTERM", "TERM", "15") to the command's main
// process.
func (e *Exec) Signal(name string) error { return errUnimplemented }

// Resize sets a TTY exec's window size.
func (e *Exec) Resize(rows, cols uint16) error { return errUnimplemented }

// Kill kills the exec's whole tree; Wait then reports Killed.
func (e *Exec) Kill() error { return errUnimplemented }

// Wait waits for the exit status, which the keeper sends after the last
// output. An error that is ErrBroken when the channel broke first.
func (e *Exec) Wait() (ExitStatus, error) { return ExitStatus{}, errUnimplemented }

// Release stops receiving this exec's output without ending it: a detached
// exec goes on filling its ring. For a non-detached exec it is Kill.
func (e *Exec) Release() error { return errUnimplemented }
