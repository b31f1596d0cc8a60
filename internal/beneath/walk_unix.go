//go:build unix

package beneath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// errNoOpenat2 says the kernel (or a seccomp filter) refused openat2
// itself; the walk does the same job.
var errNoOpenat2 = errors.New("openat2 unavailable")

// forceWalk makes Open use the walk even where openat2 exists, so tests
// cover both.
var forceWalk = false

func open(dir *os.File, rel string, flag int) (*os.File, error) {
	fd, err := openat2(dir, rel, flag)
	if errors.Is(err, errNoOpenat2) {
		fd, err = walk(dir, rel, flag)
	}
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// fdOf runs f with dir's descriptor, without Fd()'s side effect of putting
// the file in blocking mode.
func fdOf(dir *os.File, f func(fd int) error) error {
	rc, err := dir.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return fmt.Errorf("directory descriptor: %w", err)
	}
	return ferr
}

// walk opens rel one component at a time, each relative to the descriptor
// of the one before, none followed if it is a symlink. Only the last is
// opened with flag; the directories before it with dirFlags.
func walk(dir *os.File, rel string, flag int) (int, error) {
	parts := strings.Split(rel, "/")
	at := -1
	err := fdOf(dir, func(fd int) error {
		var err error
		at, err = unix.Dup(fd)
		return err
	})
	if err != nil {
		return -1, err
	}
	for i, part := range parts {
		if part == "" || (part == "." && i < len(parts)-1) {
			continue
		}
		last := i == len(parts)-1
		how := dirFlags
		if last {
			how = flag
		}
		next, err := unix.Openat(at, part, how|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			err = symlinkOr(at, part, err)
		}
		unix.Close(at)
		if err != nil {
			return -1, err
		}
		at = next
	}
	return at, nil
}

// symlinkOr names ErrSymlink when part is a symlink: O_NOFOLLOW answers
// ELOOP for a last component, O_DIRECTORY ENOTDIR for one before it.
func symlinkOr(at int, part string, err error) error {
	if errors.Is(err, unix.ELOOP) {
		return ErrSymlink
	}
	if errors.Is(err, unix.ENOTDIR) {
		var st unix.Stat_t
		if unix.Fstatat(at, part, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return ErrSymlink
		}
	}
	return err
}

// Lstat describes name, one entry of dir, without following it: a symlink
// is described as one. The lookup is relative to dir's descriptor, so a
// rename of dir's path meanwhile cannot redirect it.
func Lstat(dir *os.File, name string) (fs.FileInfo, error) {
	if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: ErrEscape}
	}
	var st unix.Stat_t
	err := fdOf(dir, func(fd int) error { return unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: err}
	}
	return statInfo{name: name, st: st}, nil
}

// statInfo is a fs.FileInfo made from a unix.Stat_t.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s statInfo) Name() string       { return s.name }
func (s statInfo) Size() int64        { return s.st.Size }
func (s statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s statInfo) Sys() any           { return &s.st }

func (s statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	return m
}
