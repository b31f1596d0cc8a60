package main

import (
	"errors"
	"flag"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"syscall"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// put writes its stdin to PATH as the sandbox's own user, with that user's
// permissions (the keeper runs as the container's user, with the container's
// capabilities): a write a command of the sandbox could not make is refused
// and changes nothing. That is why write_file is not the engine's archive
// API, which writes as the engine's root. Missing parents are made 0755. With
// -mode the file gets those permission bits; without, a new file is 0644 and
// an existing one keeps its mode. The modification time is the write's. It
// replies with one Header line: the size written, or the error.
func put(args []string) int {
	flags := flag.NewFlagSet("put", flag.ContinueOnError)
	modeFlag := flags.String("mode", "", "permission bits in octal; empty keeps an existing file's")
	framed := flags.Bool("framed", false, "stdin is data frames ended by an EOF frame; the file is replaced atomically")
	if err := flags.Parse(args); err != nil || flags.NArg() != 1 || !path.IsAbs(flags.Arg(0)) {
		return reply(keeperproto.Header{Error: "keeper put: bad arguments", Kind: keeperproto.KindInvalidRequest})
	}
	var mode *fs.FileMode
	if *modeFlag != "" {
		n, err := strconv.ParseUint(*modeFlag, 8, 32)
		if err != nil {
			return reply(keeperproto.Header{Error: "keeper put: bad mode " + *modeFlag, Kind: keeperproto.KindInvalidRequest})
		}
		m := fs.FileMode(n) & fs.ModePerm
		mode = &m
	}
	if *framed {
		return putFramed(path.Clean(flags.Arg(0)), mode)
	}
	// All of it first: a cut stream must not leave a half-written file.
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		return reply(keeperproto.Header{Error: "keeper put: reading the data: " + err.Error(), Kind: keeperproto.KindInternal})
	}
	target := path.Clean(flags.Arg(0))
	if err := os.MkdirAll(path.Dir(target), 0o755); err != nil {
		return putErr(err)
	}
	f, created, err := openForWrite(target)
	if err != nil {
		return putErr(err)
	}
	err = fill(f, created, data, mode)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return putErr(err)
	}
	return reply(keeperproto.Header{Size: int64(len(data))})
}

var errNotRegular = errors.New("not a regular file")

// openForWrite opens target without truncating it, creating it when
// missing. O_NONBLOCK: a FIFO must fail the type check, not hang the open.
func openForWrite(target string) (*os.File, bool, error) {
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NONBLOCK, 0o644)
	if err == nil {
		return f, true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, false, err
	}
	f, err = os.OpenFile(target, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	return f, false, err
}

// fill sets the mode first, so a chmod the user may not make changes
// nothing, then replaces the content.
func fill(f *os.File, created bool, data []byte, mode *fs.FileMode) error {
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return errNotRegular
	}
	switch {
	case mode != nil:
		err = f.Chmod(*mode)
	case created:
		err = f.Chmod(0o644) // the umask may have cut it at create
	}
	if err == nil {
		err = f.Truncate(0)
	}
	if err == nil {
		_, err = f.Write(data)
	}
	return err
}

// putErr: a missing path is not_found; everything else the user could not
// do (permission, a read-only filesystem, a parent that is a file, a
// directory or FIFO at the path) is invalid_request, in the kernel's words.
func putErr(err error) int {
	h := keeperproto.Header{Error: err.Error(), Kind: keeperproto.KindInvalidRequest, Reason: errnoReason(err)}
	if errors.Is(err, errNotRegular) {
		h.Error = err.Error()
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		h.Error = pe.Err.Error()
	}
	if errors.Is(err, fs.ErrNotExist) {
		h.Kind = keeperproto.KindNotFound
	}
	return reply(h)
}
