package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/term"

	"github.com/resident-dev/resident/client"
	"github.com/resident-dev/resident/protocol"
)

// errNotATerminal is -t with stdin that is not a terminal (a pipe, a file):
// there is no size to give the command and nothing to put in raw mode.
var errNotATerminal = errors.New("-t needs a terminal on stdin, and the input device is not a TTY; drop -t (and keep -i to pipe input in)")

// localTerminal is residentctl's own terminal (its stdin) while a command
// runs on a remote one (-t).
type localTerminal struct {
	f     *os.File
	saved *term.State // set while in raw mode
}

// terminalOf is stdin as a terminal, or errNotATerminal.
func terminalOf(in io.Reader) (*localTerminal, error) {
	f, ok := in.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, errNotATerminal
	}
	return &localTerminal{f: f}, nil
}

// size is the terminal's size, 24x80 if it will not say (a pty nobody
// sized), as terminals start.
func (t *localTerminal) size() protocol.WindowSize {
	cols, rows, err := term.GetSize(int(t.f.Fd()))
	if err != nil || rows <= 0 || cols <= 0 || rows > 0xffff || cols > 0xffff {
		return protocol.WindowSize{Rows: 24, Cols: 80}
	}
	return protocol.WindowSize{Rows: uint16(rows), Cols: uint16(cols)}
}

// raw puts the terminal in raw mode: every key (Ctrl-C, Ctrl-D, Ctrl-Z
// included) becomes a byte for the remote command, whose own terminal does
// the echoing, line editing and signals.
func (t *localTerminal) raw() error {
	saved, err := term.MakeRaw(int(t.f.Fd()))
	if err != nil {
		return fmt.Errorf("putting the terminal in raw mode: %w", err)
	}
	t.saved = saved
	return nil
}

// restore undoes raw; it is safe to call more than once.
func (t *localTerminal) restore() {
	if t.saved != nil {
		_ = term.Restore(int(t.f.Fd()), t.saved)
		t.saved = nil
	}
}

// execOnTerminal runs p on a remote terminal the size of t. With stdin
// (-i) t is in raw mode for the whole exec and restored on every way out
// of it: the result, an error, a cancel (SIGINT from elsewhere, SIGTERM,
// SIGHUP: main turns them into ctx) and a panic on this goroutine. Window
// size changes follow the exec (SIGWINCH, exec/resize) until it ends.
func execOnTerminal(ctx context.Context, s *session, t *localTerminal, p protocol.ExecParams, streams client.Streams) (*protocol.ExecResult, error) {
	size := t.size()
	p.TTY = &size
	if p.ExecID == "" {
		p.ExecID = "term-1" // the only exec of this session
	}
	if streams.Stdin != nil {
		if err := t.raw(); err != nil {
			return nil, err
		}
		defer t.restore()
	}
	resizeCtx, stopResizing := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		followWindowSize(resizeCtx, t, size, func(size protocol.WindowSize) {
			// conflict once the exec ended, or an interrupted call: the
			// next change, if any, says the size again.
			_ = s.Resize(resizeCtx, p.ExecID, size)
		})
	}()
	defer wg.Wait()
	defer stopResizing()
	return s.Exec(ctx, p, streams)
}
