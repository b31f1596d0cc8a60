// Package beneath opens paths inside a directory the way the store must:
// resolved and opened in one step, relative to an open descriptor of the
// directory, never following a symlink, never leaving it. A concurrent
// process that swaps a directory on the path for a symlink (a sandbox
// mounting the same volume, say) can make an open fail, never make it reach
// a file outside: there is no moment between checking a path and opening
// it for a swap to slip into.
//
// On Linux 5.6 and later this is one openat2 call with RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS. Where openat2 is missing (an older kernel, a seccomp
// profile that refuses it) it is a walk by file descriptor, one openat with
// O_NOFOLLOW per component, which refuses the same paths.
//
// Both the Docker provider's keeper (inside its store helper) and the local
// provider use it, so every store path has the same rules.
package beneath

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
)

// ErrSymlink says a component of the path is a symlink. Symlinks are never
// followed, whether they lead inside the directory or out of it: a link's
// target is the sandbox's to choose, and can change between any two calls.
var ErrSymlink = errors.New("a symlink is on the path; symlinks are never followed")

// ErrEscape says the path names something outside the directory ("..",
// an absolute path).
var ErrEscape = errors.New("the path leaves the directory")

// Open opens rel beneath dir with flag (O_RDONLY, O_NONBLOCK, O_DIRECTORY
// and the like; O_NOFOLLOW and O_CLOEXEC are added). rel is slash-separated
// and relative; "" and "." name dir itself. The error wraps ErrSymlink,
// ErrEscape or the system's (fs.ErrNotExist, syscall.ENOTDIR ...) in an
// *fs.PathError whose Path is rel.
func Open(dir *os.File, rel string, flag int) (*os.File, error) {
	if strings.HasPrefix(rel, "/") || hasDotDot(rel) {
		return nil, &fs.PathError{Op: "open", Path: rel, Err: ErrEscape}
	}
	rel = path.Clean(rel) // "a//b/./" is "a/b"; "" is "."; no ".." is left to fold
	f, err := open(dir, rel, flag)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	return f, nil
}

func hasDotDot(rel string) bool {
	for part := range strings.SplitSeq(rel, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}
