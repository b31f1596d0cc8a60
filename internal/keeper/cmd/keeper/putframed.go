package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

var errCut = errors.New("the upload ended before its end frame")

// putFramed is put for a file of any size: data frames are written to a
// temporary file beside PATH as they come, and only an EOF frame renames it
// over PATH, so a reader sees the old file or the whole new one. A stream
// that ends without the EOF frame (the provider gave up, the resident died)
// removes the temporary file and leaves PATH as it was. An existing PATH
// must be a regular file the user may write in place: the rename alone
// would replace a file the user may not write.
func putFramed(target string, mode *fs.FileMode) int {
	if err := os.MkdirAll(path.Dir(target), 0o755); err != nil {
		return putErr(err)
	}
	perm, err := framedMode(target, mode)
	if err != nil {
		return putErr(err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	tmp := path.Join(path.Dir(target), ".resident-upload-"+hex.EncodeToString(b[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return putErr(err)
	}
	n, err := copyFrames(f)
	if err == nil {
		err = f.Chmod(perm) // after the create: the umask cut it
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, target)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return putErr(err)
	}
	return reply(keeperproto.Header{Size: n})
}

// framedMode checks an existing target (opened for writing, untouched) and
// returns the new file's mode: the given one, else the existing file's,
// else 0644.
func framedMode(target string, mode *fs.FileMode) (fs.FileMode, error) {
	perm := fs.FileMode(0o644)
	if mode != nil {
		perm = *mode
	}
	info, err := os.Lstat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return perm, nil
	case err != nil:
		return 0, err
	case info.IsDir():
		return 0, &fs.PathError{Op: "open", Path: target, Err: syscall.EISDIR}
	case info.Mode()&fs.ModeSymlink != 0:
		return perm, nil // replaced by the rename, not followed
	case !info.Mode().IsRegular():
		return 0, errNotRegular
	}
	f, err := os.OpenFile(target, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, err
	}
	_ = f.Close()
	if mode == nil {
		perm = info.Mode().Perm()
	}
	return perm, nil
}

func copyFrames(f *os.File) (int64, error) {
	in := bufio.NewReaderSize(os.Stdin, 256<<10) // a frame's header and payload in one read
	var n int64
	for {
		typ, payload, err := keeperproto.ReadFrame(in)
		if err != nil {
			return n, errCut
		}
		switch typ {
		case keeperproto.FrameData:
			if _, err := f.Write(payload); err != nil {
				return n, err
			}
			n += int64(len(payload))
		case keeperproto.FrameEOF:
			return n, nil
		default:
			return n, errCut
		}
	}
}
