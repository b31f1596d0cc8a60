//go:build !unix

package beneath

import (
	"io/fs"
	"os"
	"path"
	"strings"
)

// Off unix (the resident is built for Linux; this keeps the local provider
// compiling elsewhere) the rules are the same, the race-freedom is not:
// each component is checked with Lstat, then the path is opened through an
// os.Root, which at least never resolves outside dir.
func open(dir *os.File, rel string, flag int) (*os.File, error) {
	root, err := os.OpenRoot(dir.Name())
	if err != nil {
		return nil, err
	}
	defer root.Close()
	at := ""
	for _, part := range strings.Split(rel, "/") {
		if part == "" || part == "." {
			continue
		}
		at = path.Join(at, part)
		if info, err := root.Lstat(at); err != nil {
			return nil, err
		} else if info.Mode()&fs.ModeSymlink != 0 {
			return nil, ErrSymlink
		}
	}
	return root.OpenFile(rel, flag, 0)
}

// Lstat describes name, one entry of dir, without following it.
func Lstat(dir *os.File, name string) (fs.FileInfo, error) {
	if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: ErrEscape}
	}
	return os.Lstat(path.Join(dir.Name(), name))
}
