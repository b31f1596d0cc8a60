package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"

	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// The file helpers a serving keeper runs as the operation's user (see
// helper.go): each answers with one JSON line on stdout, a fileReply.
const (
	cmdWrite = "write" // write [-mode OCTAL] -- PATH: stdin to PATH, atomically; fd 3 commits
	cmdRead  = "read"  // read -- PATH: a fileReply line, then the bytes
	cmdList  = "list"  // list -limit N -- PATH
)

type fileReply struct {
	Result  *keeperproto.Result  `json:"result,omitempty"`
	Failure *keeperproto.Failure `json:"failure,omitempty"`
}

func replyFile(r fileReply) int {
	line, _ := json.Marshal(r)
	if _, err := os.Stdout.Write(append(line, '\n')); err != nil || r.Failure != nil {
		return 1
	}
	return 0
}

func fileFailed(what string, err error) int {
	fail := failureOf(what, err)
	fail.Field = "path"
	return replyFile(fileReply{Failure: fail})
}

// writeHelper streams stdin into a temporary file beside PATH and renames
// it into place only when fd 3 says "c" after stdin's end: a cut stream,
// a cancelled upload or a keeper gone leaves nothing (the temporary file is
// removed) and a reader never sees half a file. Missing parents are made
// 0755. Without -mode a new file is 0644 and a replaced one keeps its
// permission bits.
func writeHelper(args []string) int {
	flags := flag.NewFlagSet(cmdWrite, flag.ContinueOnError)
	modeFlag := flags.String("mode", "", "permission bits in octal")
	stagedFlag := flags.Bool("staged", false, "the bytes come by other means into a staging directory (stage.go)")
	if err := flags.Parse(args); err != nil || flags.NArg() != 1 || !path.IsAbs(flags.Arg(0)) {
		return replyFile(fileReply{Failure: &keeperproto.Failure{Kind: keeperproto.KindInvalidRequest, Msg: "write_file: the path must be absolute"}})
	}
	target := path.Clean(flags.Arg(0))
	// A symlink is written through, as an open would: the file it names
	// is replaced, not the link.
	if real, err := filepath.EvalSymlinks(target); err == nil {
		target = real
	}
	mode := fs.FileMode(0o644)
	if info, err := os.Stat(target); err == nil {
		if info.IsDir() {
			return fileFailed(target, &fs.PathError{Op: "write", Path: target, Err: syscall.EISDIR})
		}
		if !info.Mode().IsRegular() {
			return replyFile(fileReply{Failure: &keeperproto.Failure{Kind: keeperproto.KindInvalidRequest, Msg: target + ": not a regular file"}})
		}
		// Replacing is writing: a file the user may not write stays as it
		// is, even in a directory the user may write.
		f, err := os.OpenFile(target, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return fileFailed(target, err)
		}
		f.Close()
		mode = info.Mode().Perm()
	}
	if *modeFlag != "" {
		n, err := strconv.ParseUint(*modeFlag, 8, 32)
		if err != nil {
			return replyFile(fileReply{Failure: &keeperproto.Failure{Kind: keeperproto.KindInvalidRequest, Msg: "write_file: bad mode " + *modeFlag}})
		}
		mode = fs.FileMode(n) & fs.ModePerm
	}
	if err := os.MkdirAll(path.Dir(target), 0o755); err != nil {
		return fileFailed(path.Dir(target), err)
	}
	tmp := uploadName(target)
	if *stagedFlag {
		return stagedWrite(target, tmp, mode)
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fileFailed(target, err)
	}
	size, err := io.Copy(f, bufio.NewReaderSize(os.Stdin, 64<<10))
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && !committed() {
		err = errors.New("the upload was cancelled")
	}
	if err == nil {
		err = os.Rename(tmp, target)
	}
	if err != nil {
		os.Remove(tmp)
		return fileFailed(target, err)
	}
	return replyFile(fileReply{Result: &keeperproto.Result{Size: size}})
}

// uploadName is the name every provider gives an upload in flight, beside
// its target (the conformance suite looks for leftovers by it).
func uploadName(target string) string {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	return path.Join(path.Dir(target), ".resident-upload-"+hex.EncodeToString(rnd[:]))
}

// committed reads the keeper's verdict on fd 3: "c" once every byte came.
func committed() bool {
	f := os.NewFile(3, "commit")
	defer f.Close()
	var b [1]byte
	n, _ := f.Read(b[:])
	return n == 1 && b[0] == 'c'
}

// readHelper answers with the size, then writes the file's bytes. A FIFO
// or device is refused, never opened blocking.
func readHelper(args []string) int {
	flags := flag.NewFlagSet(cmdRead, flag.ContinueOnError)
	statOnly := flags.Bool("stat", false, "answer with the size and the file's identity (FileInfo), send no bytes")
	if err := flags.Parse(args); err != nil || flags.NArg() != 1 || !path.IsAbs(flags.Arg(0)) {
		return replyFile(fileReply{Failure: &keeperproto.Failure{Kind: keeperproto.KindInvalidRequest, Msg: "read_file: the path must be absolute"}})
	}
	p := flags.Arg(0)
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fileFailed(p, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fileFailed(p, err)
	}
	if info.IsDir() {
		return fileFailed(p, &fs.PathError{Op: "read", Path: p, Err: syscall.EISDIR})
	}
	if !info.Mode().IsRegular() {
		return replyFile(fileReply{Failure: &keeperproto.Failure{Kind: keeperproto.KindInvalidRequest, Msg: p + ": not a regular file"}})
	}
	// What was opened goes with every read's answer: a holder may take
	// the bytes by other means instead (stage.go).
	res := keeperproto.Result{Size: info.Size(), File: fileInfo(f, info)}
	if *statOnly {
		return replyFile(fileReply{Result: &res})
	}
	if code := replyFile(fileReply{Result: &res}); code != 0 {
		return code
	}
	if _, err := io.Copy(os.Stdout, f); err != nil {
		return 1 // the keeper sees the helper fail and says so
	}
	return 0
}

// listHelper lists at most -limit entries of a directory, never following
// a symlink in the listing (each entry is an lstat).
func listHelper(args []string) int {
	flags := flag.NewFlagSet(cmdList, flag.ContinueOnError)
	limit := flags.Int("limit", 1000, "most entries")
	if err := flags.Parse(args); err != nil || flags.NArg() != 1 || !path.IsAbs(flags.Arg(0)) || *limit < 1 {
		return replyFile(fileReply{Failure: &keeperproto.Failure{Kind: keeperproto.KindInvalidRequest, Msg: "list_dir: the path must be absolute and the limit positive"}})
	}
	p := flags.Arg(0)
	dir, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_DIRECTORY, 0)
	if err != nil {
		return fileFailed(p, err)
	}
	defer dir.Close()
	names, err := dir.ReadDir(*limit + 1)
	if err != nil && err != io.EOF {
		return fileFailed(p, err)
	}
	res := keeperproto.Result{Entries: []keeperproto.Entry{}}
	if len(names) > *limit {
		res.Truncated, names = true, names[:*limit]
	}
	for _, d := range names {
		info, err := os.Lstat(path.Join(p, d.Name()))
		if err != nil {
			continue // removed since
		}
		res.Entries = append(res.Entries, keeperproto.Entry{Name: d.Name(), Type: entryType(info.Mode()), Size: info.Size(), MtimeNS: info.ModTime().UnixNano()})
	}
	return replyFile(fileReply{Result: &res})
}
