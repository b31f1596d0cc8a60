package main

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// outPipe is one output of an exec, read by one pump.
type outPipe struct {
	f   *os.File
	typ byte // ChanStdout or ChanStderr
}

// plumb makes the command's stdin, stdout and stderr: pipes, or one
// pseudo-terminal for all three. files are the child's ends (closed by the
// caller after the fork), parentEnds the keeper's (closed on a failed start).
func (ex *execState) plumb(req keeperproto.Exec, sys *syscall.SysProcAttr) (files, parentEnds []*os.File, fail *keeperproto.Failure) {
	internal := func(what string, err error) *keeperproto.Failure {
		for _, f := range append(files, parentEnds...) {
			f.Close()
		}
		return &keeperproto.Failure{Kind: keeperproto.KindInternal, Msg: what + ": " + err.Error()}
	}
	if req.TTY != nil {
		master, slave, err := openPTY(*req.TTY)
		if err != nil {
			return nil, nil, internal("pty", err)
		}
		sys.Setpgid, sys.Setsid, sys.Setctty, sys.Ctty = false, true, true, 0
		ex.tty = master
		ex.outs = []outPipe{{master, keeperproto.ChanStdout}}
		ex.stdin = newInputQueue(master, false, nil)
		ex.pumps.Add(1)
		return []*os.File{slave, slave, slave}, []*os.File{master}, nil
	}
	var stdin *os.File
	if req.Stdin {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, internal("stdin pipe", err)
		}
		stdin = r
		parentEnds = append(parentEnds, w)
		ex.stdin = newInputQueue(w, true, nil)
	} else {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, nil, internal("stdin", err)
		}
		stdin = f
	}
	files = append(files, stdin)
	for _, typ := range []byte{keeperproto.ChanStdout, keeperproto.ChanStderr} {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, internal("output pipe", err)
		}
		growPipe(r)
		files = append(files, w)
		parentEnds = append(parentEnds, r)
		ex.outs = append(ex.outs, outPipe{r, typ})
	}
	ex.pumps.Add(len(ex.outs))
	return files, parentEnds, nil
}

// outSink is where a pump puts what it reads.
type outSink interface {
	// room waits until the sink may take more and says how much; 0 when
	// it is gone (what is read then is thrown away).
	room() int
	put(typ byte, data []byte)
	unused(n int) // room taken but not filled
}

// pumpAll starts one pump per output into sink.
func (ex *execState) pumpAll(sink outSink) {
	for _, o := range ex.outs {
		go ex.pump(o, sink)
	}
}

// pump copies one output to the sink, reading only as much as the sink has
// room for, so a stalled reader stalls the command's writes, not the
// keeper. After the main process exited (the read deadline) it takes what
// is left in the pipe without waiting and stops.
func (ex *execState) pump(o outPipe, sink outSink) {
	defer ex.pumps.Done()
	defer o.f.Close()
	buf := make([]byte, keeperproto.MaxPayload)
	draining := false
	for {
		n := sink.room()
		gone := n == 0
		if gone {
			n = len(buf)
		}
		var got int
		var err error
		if draining {
			got, err = readNow(o.f, buf[:n])
		} else {
			got, err = gatedRead(o.f, buf[:n])
		}
		if got > 0 && !gone {
			sink.put(o.typ, buf[:got])
		}
		if !gone {
			sink.unused(n - got)
		}
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded) && !draining:
			draining = true
			_ = o.f.SetReadDeadline(time.Time{})
		case err != nil || (draining && got == 0):
			return
		}
	}
}

// readNow reads what the pipe holds without waiting: 0 and no error when
// it is empty.
func readNow(f *os.File, buf []byte) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		gateEnter()
		n, rerr = syscall.Read(int(fd), buf)
		gateLeave()
		return true
	}); err != nil {
		return 0, err
	}
	if errors.Is(rerr, syscall.EAGAIN) {
		return 0, nil
	}
	if n < 0 {
		n = 0
	}
	if n == 0 && rerr == nil {
		return 0, os.ErrClosed // EOF
	}
	return n, rerr
}

// outPipeSize is what an output pipe is grown to (the default is 64 KiB):
// a command writing in small blocks then rarely waits for the keeper, and
// the keeper reads whole frames at a time. Best effort: a pipe stays as it
// is when the kernel's per-user pipe budget says no.
const outPipeSize = 1 << 20

func growPipe(f *os.File) {
	const fSetPipeSize = 1031
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSize, outPipeSize)
		})
	}
}
