package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// helper runs the keeper's own binary (args: a subcommand) as user, with
// files as its descriptors: file operations and the probe run with the
// user's rights and no capability, so privilege dropping stays in one
// place (the fork's credentials).
func (s *server) helper(user string, env []string, args []string, files []*os.File) (int, <-chan syscall.WaitStatus, *keeperproto.Failure) {
	who, err := resolveUser(user, s.id)
	if err != nil {
		return 0, nil, &keeperproto.Failure{Kind: keeperproto.KindInvalidRequest, Msg: err.Error()}
	}
	return s.helperAs(who, user, env, args, files)
}

func (s *server) helperAs(who identity, user string, env []string, args []string, files []*os.File) (int, <-chan syscall.WaitStatus, *keeperproto.Failure) {
	sys := &syscall.SysProcAttr{Setpgid: true}
	if s.protected {
		sys.Credential = credentialOf(who)
	} else if user != "" && who.uid != s.id.uid {
		return 0, nil, &keeperproto.Failure{Kind: keeperproto.KindInvalidRequest, Reason: keeperproto.ReasonPermissionDenied,
			Msg: fmt.Sprintf("user %q: this keeper runs unprotected and cannot switch users", user)}
	}
	argv := append([]string{s.self}, args...)
	pid, exited, err := s.reaper.start(func() (int, error) {
		proc, err := os.StartProcess(s.self, argv, &os.ProcAttr{Dir: "/", Env: env, Files: files, Sys: sys})
		if err != nil {
			return 0, err
		}
		pid := proc.Pid
		_ = proc.Release()
		return pid, nil
	})
	if err != nil {
		kind, reason := fileReason(err)
		return 0, nil, &keeperproto.Failure{Kind: kind, Reason: reason, Msg: "keeper helper: " + err.Error()}
	}
	return pid, exited, nil
}

func credentialOf(who identity) *syscall.Credential {
	groups := make([]uint32, 0, len(who.groups))
	for _, g := range who.groups {
		groups = append(groups, uint32(g))
	}
	return &syscall.Credential{Uid: uint32(who.uid), Gid: uint32(who.gid), Groups: groups}
}

// probe asks the probe helper, as the exec's user, where argv[0] is or why
// it cannot be run.
func (s *server) probe(req keeperproto.Exec, sys *syscall.SysProcAttr) (string, *keeperproto.Failure) {
	who := s.id
	if sys.Credential != nil {
		who = identity{uid: int(sys.Credential.Uid), gid: int(sys.Credential.Gid)}
		for _, g := range sys.Credential.Groups {
			who.groups = append(who.groups, int(g))
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return "", &keeperproto.Failure{Kind: keeperproto.KindInternal, Msg: "probe: " + err.Error()}
	}
	null, _ := os.Open(os.DevNull)
	env := []string{"PATH=" + envValue(req.Env, "PATH")}
	_, exited, fail := s.helperAs(who, "", env, []string{cmdProbe, "-cwd", req.Cwd, "--", req.Argv[0]}, []*os.File{null, w, null})
	w.Close()
	null.Close()
	defer r.Close()
	if fail != nil {
		return "", fail
	}
	var reply probeReply
	err = json.NewDecoder(bufio.NewReader(r)).Decode(&reply)
	<-exited
	if err != nil {
		return "", &keeperproto.Failure{Kind: keeperproto.KindInternal, Msg: "probe: " + err.Error()}
	}
	if reply.Failure != nil {
		return "", reply.Failure
	}
	return reply.Path, nil
}

// explain says why a fork of the exec failed: the probe, as the user,
// knows better than the errno (ENOENT is a missing program and a missing
// cwd alike).
func (s *server) explain(req keeperproto.Exec, sys *syscall.SysProcAttr, forkErr error) *keeperproto.Failure {
	// Before the probe: the probe is a fork too, and would fail the same.
	if errors.Is(forkErr, syscall.EAGAIN) {
		return &keeperproto.Failure{Kind: keeperproto.KindTransient, Msg: fmt.Sprintf("exec %q: the sandbox is at its pids limit (%v)", req.Argv[0], forkErr)}
	}
	if _, fail := s.probe(req, sys); fail != nil {
		return fail
	}
	fail := failureOf(fmt.Sprintf("exec %q", req.Argv[0]), forkErr)
	fail.Field = "argv"
	return fail
}
