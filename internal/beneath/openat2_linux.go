package beneath

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// dirFlags open a directory on the way for the walk: O_PATH needs search
// permission only, as a path lookup would.
const dirFlags = unix.O_PATH | unix.O_DIRECTORY

// openat2 resolves and opens rel in one call: RESOLVE_BENEATH refuses any
// step out of dir (".." past it, an absolute link), RESOLVE_NO_SYMLINKS
// any symlink at all, RESOLVE_NO_MAGICLINKS the /proc kind. The kernel
// answers EAGAIN when a rename raced the lookup; a few retries, then the
// race is reported, never resolved in the racer's favour.
func openat2(dir *os.File, rel string, flag int) (int, error) {
	if forceWalk {
		return -1, errNoOpenat2
	}
	how := unix.OpenHow{
		Flags:   uint64(flag | unix.O_NOFOLLOW | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	fd := -1
	err := fdOf(dir, func(dirfd int) error {
		var err error
		for range 8 {
			fd, err = unix.Openat2(dirfd, rel, &how)
			if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
				break
			}
		}
		return err
	})
	switch {
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
		// ENOSYS: a kernel before 5.6, or a seccomp filter that refuses
		// the call. EPERM: a filter's other answer; the walk meets any
		// real EPERM of the file system again and reports it.
		return -1, errNoOpenat2
	case errors.Is(err, unix.ELOOP):
		return -1, ErrSymlink
	case errors.Is(err, unix.EXDEV):
		return -1, ErrEscape
	}
	return fd, err
}
