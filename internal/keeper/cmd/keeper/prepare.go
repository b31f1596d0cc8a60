package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// enter moves to the exec's work directory and resolves its executable,
// reporting why not as the status line; code is 0 when both worked.
func enter(cwd, name string) (bin string, code int) {
	if cwd != "" {
		if err := os.Chdir(cwd); err != nil {
			kind := keeperproto.KindInvalidRequest
			if errors.Is(err, os.ErrNotExist) {
				kind = keeperproto.KindNotFound
			}
			status("err", withReason(kind, errnoReason(err), "cwd"), fmt.Sprintf("exec cwd %q: %v", cwd, unwrapPathError(err)))
			return "", 126
		}
	}
	bin, err := lookPath(name, os.Getenv("PATH"))
	if err != nil {
		reason, code := "no_such_file", 127
		if errors.Is(err, errNotExecutable) {
			reason, code = "permission_denied", 126
		}
		status("err", withReason(keeperproto.KindInvalidRequest, reason, "argv"), err.Error())
		return "", code
	}
	return bin, 0
}

// withReason is the kind word of an err status with the protocol's reason
// and the field it is about: "kind/reason/field" (see
// keeperproto.StatusPrefix). The reason decides the kind the provider
// answers.
func withReason(kind, reason, field string) string {
	if reason == "" {
		return kind
	}
	return kind + "/" + reason + "/" + field
}

var errNotExecutable = errors.New("not an executable file")

// markOf is the run's mark, reporting as the status line why there is none
// to be had; code is 0 when all is well (or the keeper is unprotected and
// needs none).
func markOf(token string, protected, exclusive bool) (mark uint32, code int) {
	mark, ok := keeperproto.Mark(token)
	switch {
	case protected && !ok:
		status("err", keeperproto.KindInvalidRequest, "keeper run: bad token")
		return 0, 2
	case exclusive && !protected:
		status("err", keeperproto.KindInvalidRequest, "exec: exclusive needs a sandbox that runs as root (the image's USER is not root)")
		return 0, 2
	case protected && len(marked(hasMark(mark))) > 0:
		// A live process of an earlier exec has the same mark (1 in 2^28
		// per pair of execs): this exec's kill would reach it.
		status("err", keeperproto.KindTransient, "exec: mark in use, try again")
		return 0, 126
	}
	return mark, 0
}

func withMark(groups []int, mark uint32) []uint32 {
	out := make([]uint32, 0, len(groups)+1)
	for _, g := range groups {
		out = append(out, uint32(g))
	}
	return append(out, mark)
}

// lookPath resolves argv[0] the way execvp does, with the exec's PATH.
func lookPath(name, pathEnv string) (string, error) {
	if strings.Contains(name, "/") {
		if executable(name) {
			return name, nil
		}
		if _, err := os.Stat(name); errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("exec %q: no such file or directory", name)
		}
		return "", fmt.Errorf("exec %q: %w", name, errNotExecutable)
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		if p := filepath.Join(dir, name); executable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec %q: executable file not found in $PATH", name)
}

func executable(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
