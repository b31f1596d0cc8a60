package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// CmdProbe is the helper a serving keeper runs, as an exec's user, when it
// cannot find or start the exec's program: it does what the start would
// (chdir, the PATH search) with the user's rights and says exactly what
// fails, so a missing program, a missing cwd and a file that is not
// executable are told apart. Only on the failure path: a start that works
// costs no second process.
const cmdProbe = "probe"

type probeReply struct {
	Path    string               `json:"path,omitempty"`
	Failure *keeperproto.Failure `json:"failure,omitempty"`
}

func probe(args []string) int {
	flags := flag.NewFlagSet("probe", flag.ContinueOnError)
	cwd := flags.String("cwd", "", "the exec's work directory")
	if err := flags.Parse(args); err != nil || flags.NArg() != 1 {
		return 2
	}
	reply := probeReply{}
	reply.Path, reply.Failure = probeProgram(*cwd, flags.Arg(0))
	_ = json.NewEncoder(os.Stdout).Encode(reply)
	return 0
}

func probeProgram(cwd, name string) (string, *keeperproto.Failure) {
	if cwd != "" {
		if err := os.Chdir(cwd); err != nil {
			fail := failureOf(fmt.Sprintf("cwd %q", cwd), err)
			fail.Field = "cwd"
			return "", fail
		}
	}
	if strings.Contains(name, "/") {
		return name, checkProgram(name)
	}
	var first *keeperproto.Failure
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		fail := checkProgram(p)
		if fail == nil {
			return p, nil
		}
		if first == nil {
			first = fail // execvp goes on past a file it may not run
		}
	}
	if first != nil {
		return "", first
	}
	return "", &keeperproto.Failure{Kind: keeperproto.KindInvalidRequest, Reason: keeperproto.ReasonNoSuchFile, Field: "argv",
		Msg: fmt.Sprintf("exec %q: executable file not found in $PATH", name)}
}

func checkProgram(p string) *keeperproto.Failure {
	info, err := os.Stat(p)
	if err != nil {
		fail := failureOf(fmt.Sprintf("exec %q", p), err)
		fail.Field = "argv"
		return fail
	}
	if info.IsDir() {
		return &keeperproto.Failure{Kind: keeperproto.KindInvalidRequest, Reason: keeperproto.ReasonIsDirectory, Field: "argv", Msg: fmt.Sprintf("exec %q: is a directory", p)}
	}
	if !info.Mode().IsRegular() || syscall.Access(p, 1 /* X_OK */) != nil {
		return &keeperproto.Failure{Kind: keeperproto.KindInvalidRequest, Reason: keeperproto.ReasonPermissionDenied, Field: "argv", Msg: fmt.Sprintf("exec %q: not an executable file", p)}
	}
	return nil
}

// failureOf maps a file error to its kind and reason (issue 14's set, each
// reason with the kind protocol.Reason.Kind gives it); the message is
// what, then the kernel's words.
func failureOf(what string, err error) *keeperproto.Failure {
	kind, reason := fileReason(err)
	return &keeperproto.Failure{Kind: kind, Reason: reason, Msg: what + ": " + unwrapPathError(err).Error()}
}

func fileReason(err error) (kind, reason string) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return keeperproto.KindNotFound, keeperproto.ReasonNoSuchFile
	case errors.Is(err, syscall.ENOTDIR):
		return keeperproto.KindInvalidRequest, keeperproto.ReasonNotDirectory
	case errors.Is(err, syscall.EISDIR):
		return keeperproto.KindInvalidRequest, keeperproto.ReasonIsDirectory
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS), errors.Is(err, syscall.ETXTBSY):
		return keeperproto.KindInvalidRequest, keeperproto.ReasonPermissionDenied
	case errors.Is(err, fs.ErrExist), errors.Is(err, syscall.ENOTEMPTY):
		return keeperproto.KindConflict, keeperproto.ReasonExists
	case errors.Is(err, syscall.EFBIG), errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return keeperproto.KindQuota, keeperproto.ReasonTooLarge
	case errors.Is(err, syscall.EAGAIN):
		return keeperproto.KindTransient, ""
	}
	return keeperproto.KindInvalidRequest, ""
}
