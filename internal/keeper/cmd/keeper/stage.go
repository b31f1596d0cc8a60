package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"syscall"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// Staged files (FeatureFileStage): the holder moves a big file's bytes on
// a faster transport than the channel (the engine's archive endpoint, which
// reads and writes as the engine's root), and the keeper does the parts
// that must be the user's: it opens a file to be read as the user and says
// what it found (read -stat), and it checks a write as the user, makes the
// staging directory the bytes go into and renames the staged file over the
// target as the user (write -staged).

// fileInfo is what an opened file is, for a holder that reads it by other
// means and checks that it read this file.
func fileInfo(f *os.File, info fs.FileInfo) *keeperproto.FileInfo {
	fi := &keeperproto.FileInfo{Mode: uint32(info.Mode().Perm()), Size: info.Size(), MtimeNS: info.ModTime().UnixNano()}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		fi.UID, fi.GID = int(st.Uid), int(st.Gid)
		fi.OnRoot = onRoot(st.Dev)
	}
	// The path the descriptor names has no symlink on it: a read of it by
	// other means resolves nothing a sandbox could swap unseen (the holder
	// checks what it read against the rest).
	if p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd()))); err == nil && path.IsAbs(p) {
		fi.Path = p
	}
	return fi
}

// onRoot says whether dev is the sandbox root's filesystem.
func onRoot(dev uint64) bool {
	var root syscall.Stat_t
	return syscall.Stat("/", &root) == nil && root.Dev == dev
}

// stagedWrite makes the staging directory dir (0700, the user's), answers
// with it, then waits for the holder's verdict: the staged file's size on
// stdin and the commit on fd 3. Whatever happens, dir is gone when it
// returns; a staged file is renamed over target only once checked.
func stagedWrite(target, dir string, mode fs.FileMode) int {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fileFailed(target, err)
	}
	defer os.RemoveAll(dir)
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return fileFailed(target, err)
	}
	info := keeperproto.FileInfo{Path: dir, Mode: uint32(mode), UID: os.Geteuid(), GID: os.Getegid(), OnRoot: onRoot(st.Dev)}
	if code := replyFile(fileReply{Result: &keeperproto.Result{File: &info}}); code != 0 {
		return code
	}
	size, err := io.ReadAll(io.LimitReader(os.Stdin, 9))
	if err == nil && len(size) != 8 {
		err = errors.New("the upload was cancelled")
	}
	if err == nil && !committed() {
		err = errors.New("the upload was cancelled")
	}
	// Named as its directory: a name nobody in the sandbox is told, hidden,
	// so that bytes an engine put elsewhere (a sandbox that swapped the
	// directory for a symlink under the holder) are at least never a name
	// a program would pick up.
	staged := path.Join(dir, path.Base(dir))
	var want int64
	if err == nil {
		want = int64(binary.BigEndian.Uint64(size))
		err = checkStaged(staged, want)
	}
	if err == nil {
		err = os.Chmod(staged, mode)
	}
	if err == nil {
		err = os.Rename(staged, target)
	}
	if err != nil {
		return fileFailed(target, err)
	}
	return replyFile(fileReply{Result: &keeperproto.Result{Size: want}})
}

// checkStaged holds the staged file to what the holder says it put there:
// a regular file of want bytes, the user's.
func checkStaged(staged string, want int64) error {
	info, err := os.Lstat(staged)
	if err != nil {
		return fmt.Errorf("the staged upload is missing: %w", err)
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	switch {
	case !info.Mode().IsRegular():
		return errors.New("the staged upload is not a regular file")
	case info.Size() != want:
		return fmt.Errorf("the staged upload has %d bytes, not %d", info.Size(), want)
	case !ok || int(st.Uid) != os.Geteuid():
		return errors.New("the staged upload is not the user's")
	}
	return nil
}
