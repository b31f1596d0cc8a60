package main

import (
	"encoding/json"
	"errors"
	"flag"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/resident-dev/resident/provider/docker/internal/keeperproto"
)

// ls prints a JSON listing of one directory of the mounted volume: at most
// -limit entries in directory order, and whether more exist. It reads the
// directory in chunks of limit+1, never the whole of a huge one.
func ls(args []string) int {
	flags := flag.NewFlagSet("ls", flag.ContinueOnError)
	limit := flags.Int("limit", 1000, "most entries to list")
	if err := flags.Parse(args); err != nil || flags.NArg() != 1 || *limit < 1 {
		return reply(keeperproto.Header{Error: "keeper ls: bad arguments", Kind: keeperproto.KindInvalidRequest})
	}
	root, rel, err := openRoot(flags.Arg(0))
	if err != nil {
		return replyErr(err)
	}
	defer root.Close()
	dir, err := openNonBlocking(root, rel)
	if err != nil {
		return replyErr(err)
	}
	defer dir.Close()
	if info, err := dir.Stat(); err != nil {
		return replyErr(err)
	} else if !info.IsDir() {
		return reply(keeperproto.Header{Error: "not a directory", Kind: keeperproto.KindInvalidRequest})
	}
	names, err := dir.ReadDir(*limit + 1)
	if err != nil && err != io.EOF {
		return replyErr(err)
	}
	h := keeperproto.Header{Entries: []keeperproto.Entry{}}
	if len(names) > *limit {
		h.Truncated = true
		names = names[:*limit]
	}
	for _, d := range names {
		// Lstat: a symlink is listed as one, never followed.
		info, err := root.Lstat(path.Join(rel, d.Name()))
		if err != nil {
			continue // removed since ReadDir
		}
		h.Entries = append(h.Entries, keeperproto.Entry{Name: d.Name(), Type: entryType(info.Mode()), Size: info.Size(), MtimeNS: info.ModTime().UnixNano()})
	}
	return reply(h)
}

// cat writes a Header line with the size, then the file's bytes, streamed.
func cat(args []string) int {
	flags := flag.NewFlagSet("cat", flag.ContinueOnError)
	if err := flags.Parse(args); err != nil || flags.NArg() != 1 {
		return reply(keeperproto.Header{Error: "keeper cat: bad arguments", Kind: keeperproto.KindInvalidRequest})
	}
	root, rel, err := openRoot(flags.Arg(0))
	if err != nil {
		return replyErr(err)
	}
	defer root.Close()
	f, err := openNonBlocking(root, rel)
	if err != nil {
		return replyErr(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return replyErr(err)
	}
	if !info.Mode().IsRegular() {
		return reply(keeperproto.Header{Error: "not a regular file", Kind: keeperproto.KindInvalidRequest})
	}
	if code := reply(keeperproto.Header{Size: info.Size()}); code != 0 {
		return code
	}
	if _, err := io.Copy(os.Stdout, f); err != nil {
		return 1 // the provider sees fewer bytes than announced
	}
	return 0
}

// openRoot opens the volume as an os.Root: every path below it is resolved
// inside it, symlinks included, and one that would leave it is an error.
func openRoot(p string) (*os.Root, string, error) {
	rel := strings.TrimPrefix(path.Clean("/"+p), "/")
	if rel == "" {
		rel = "."
	}
	root, err := os.OpenRoot(keeperproto.StoreRoot)
	return root, rel, err
}

// openNonBlocking opens a path for reading without blocking: a sandbox can
// plant a FIFO in a volume, and a plain open of one waits for a writer that
// never comes, hanging the helper and the host's request. O_NONBLOCK makes
// that open return at once (the type check that follows refuses it) and
// changes nothing for regular files and directories.
func openNonBlocking(root *os.Root, rel string) (*os.File, error) {
	return root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

func entryType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}

func replyErr(err error) int {
	h := keeperproto.Header{Error: err.Error(), Kind: keeperproto.KindInvalidRequest}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		h.Error = pe.Err.Error()
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		h.Kind = keeperproto.KindNotFound
	}
	return reply(h)
}

func reply(h keeperproto.Header) int {
	line, _ := json.Marshal(h)
	if _, err := os.Stdout.Write(append(line, '\n')); err != nil {
		return 1
	}
	if h.Error != "" {
		return 1
	}
	return 0
}
