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

	"github.com/resident-dev/resident/internal/beneath"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// ls prints a JSON listing of one directory of the mounted volume: at most
// -limit entries in directory order, and whether more exist. It reads the
// directory in chunks of limit+1, never the whole of a huge one.
func ls(args []string) int {
	flags := flag.NewFlagSet("ls", flag.ContinueOnError)
	limit := flags.Int("limit", 1000, "most entries to list")
	lease := flags.Bool("lease", false, "exit when stdin ends")
	sandbox := flags.Bool("sandbox", false, "PATH is the sandbox's own, opened as its user opens it")
	if err := flags.Parse(args); err != nil || flags.NArg() != 1 || *limit < 1 {
		return reply(keeperproto.Header{Error: "keeper ls: bad arguments", Kind: keeperproto.KindInvalidRequest})
	}
	holdLease(*lease)
	dir, err := openTarget(flags.Arg(0), *sandbox)
	if err != nil {
		return replyErr(err)
	}
	defer dir.Close()
	if info, err := dir.Stat(); err != nil {
		return replyErr(err)
	} else if !info.IsDir() {
		return reply(keeperproto.Header{Error: "not a directory", Kind: keeperproto.KindInvalidRequest, Reason: "not_directory"})
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
		// Lstat in the open directory: a symlink is listed as one, never
		// followed, and a rename of the directory's path cannot redirect it.
		info, err := beneath.Lstat(dir, d.Name())
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
	lease := flags.Bool("lease", false, "exit when stdin ends")
	sandbox := flags.Bool("sandbox", false, "PATH is the sandbox's own, opened as its user opens it")
	if err := flags.Parse(args); err != nil || flags.NArg() != 1 {
		return reply(keeperproto.Header{Error: "keeper cat: bad arguments", Kind: keeperproto.KindInvalidRequest})
	}
	holdLease(*lease)
	f, err := openTarget(flags.Arg(0), *sandbox)
	if err != nil {
		return replyErr(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return replyErr(err)
	}
	if info.IsDir() {
		return reply(keeperproto.Header{Error: "is a directory", Kind: keeperproto.KindInvalidRequest, Reason: "is_directory"})
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

// holdLease ties the helper's life to its request. The provider attaches
// to the helper's stdin and never writes to it; the engine closes that stdin
// when the attach ends (StdinOnce), which happens when the provider closes
// it and also when the resident dies mid-request. Either way the keeper
// exits at once instead of streaming the rest of a file to nobody, and the
// engine removes the container (AutoRemove), freeing the volume.
func holdLease(on bool) {
	if !on {
		return
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(3)
	}()
}

// openTarget opens what cat or ls reads. In a volume (the store) the path
// is taken below StoreRoot through no symlink at all. With sandbox, the
// keeper runs in the sandbox as its user, and the path is the sandbox's own,
// opened exactly as a command of that user would open it: there is nothing
// to escape to, and the user's permissions are the check.
func openTarget(p string, sandbox bool) (*os.File, error) {
	if sandbox {
		return os.OpenFile(path.Clean("/"+p), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	}
	root, rel, err := openRoot(p)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return openNonBlocking(root, rel)
}

// openRoot opens the volume's directory; every path below it is opened
// relative to it by beneath.Open, in one step, never through a symlink.
func openRoot(p string) (*os.File, string, error) {
	rel := strings.TrimPrefix(path.Clean("/"+p), "/")
	root, err := os.Open(keeperproto.StoreRoot)
	return root, rel, err
}

// openNonBlocking opens a path for reading without blocking: a sandbox can
// plant a FIFO in a volume, and a plain open of one waits for a writer that
// never comes, hanging the helper and the host's request. O_NONBLOCK makes
// that open return at once (the type check that follows refuses it) and
// changes nothing for regular files and directories.
func openNonBlocking(root *os.File, rel string) (*os.File, error) {
	return beneath.Open(root, rel, os.O_RDONLY|syscall.O_NONBLOCK)
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
	h := keeperproto.Header{Error: err.Error(), Kind: keeperproto.KindInvalidRequest, Reason: errnoReason(err)}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		h.Error = pe.Err.Error()
	}
	// A symlink on the path or a way out (beneath.ErrSymlink, ErrEscape)
	// stays invalid_request, in beneath's words.
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
