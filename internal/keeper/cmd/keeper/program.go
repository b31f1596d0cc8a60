package main

import (
	"path/filepath"
	"strings"
	"syscall"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// resolveProgram finds argv[0] in the exec's PATH, as execvp would. The
// keeper looks first with its own rights (a directory only root may read
// hides nothing from it in practice); when it finds nothing the probe
// looks again, as the exec's user, and says exactly why not.
func (s *server) resolveProgram(req keeperproto.Exec, sys *syscall.SysProcAttr) (string, *keeperproto.Failure) {
	name := req.Argv[0]
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range filepath.SplitList(envValue(req.Env, "PATH")) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if !filepath.IsAbs(p) && req.Cwd != "" {
			// relative PATH entries resolve in the child after its chdir
			return p, nil
		}
		if executable(p) {
			return p, nil
		}
	}
	found, fail := s.probe(req, sys)
	if fail != nil {
		return "", fail
	}
	return found, nil
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}
