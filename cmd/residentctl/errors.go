package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/resident-dev/resident/client"
	"github.com/resident-dev/resident/protocol"
)

// report prints err with its kind and a one-line hint on how to get past
// it, and returns code (exitInterrupted when the user interrupted).
func report(stdio stdio, g *globals, what string, err error, code int) int {
	kind := string(client.KindOf(err))
	switch {
	case errors.Is(err, errNoResident):
		kind = "setup"
	case errors.Is(err, client.ErrExited):
		kind = "resident_exited"
	case kind == "" && errors.Is(err, context.Canceled):
		kind = string(protocol.KindCancelled)
	case kind == "":
		kind = "error"
	}
	fmt.Fprintf(stdio.err, "residentctl: %s: %v\n", what, err)
	fmt.Fprintf(stdio.err, "residentctl: %s; hint: %s\n", kind, hint(g, what, err))
	if errors.Is(err, context.Canceled) {
		return exitInterrupted
	}
	return code
}

func hint(g *globals, what string, err error) string {
	switch {
	case errors.Is(err, errNoResident):
		return "put the resident binary beside residentctl (go build -o DIR ./cmd/resident ./cmd/residentctl), on $PATH, or pass --resident PATH"
	case errors.Is(err, client.ErrCredentialsExpired):
		return "the credentials expired or were refused; run the command again so a fresh resident starts"
	case errors.Is(err, client.ErrExited):
		return "the resident stopped unexpectedly; run again with --log-file FILE and read its last lines"
	}
	switch client.KindOf(err) {
	case protocol.KindInvalidRequest:
		return "the resident refused the request as given; check the arguments (residentctl help)"
	case protocol.KindNotFound:
		if strings.HasPrefix(what, "cat") || strings.HasPrefix(what, "ls-volume") {
			return "`residentctl volumes` lists the volumes and `residentctl ls-volume VOL [PATH]` their files"
		}
		return fmt.Sprintf("`residentctl ls` lists the sandboxes of install id %q; sandboxes of another --install-id look missing", g.installID)
	case protocol.KindQuota:
		return "a resident limit was hit; wait for other commands to finish, or send less (cp: at most limits.max_file_bytes)"
	case protocol.KindTimeout:
		return "the provider timed out; retry, and check that it is healthy (docker: does the engine at DOCKER_HOST answer?)"
	case protocol.KindCancelled:
		return "interrupted before it finished; run it again"
	case protocol.KindConflict:
		return "the request clashes with the current state; check `residentctl ls` and retry"
	case protocol.KindTransient:
		return "a temporary failure; retry in a moment (docker: check that the engine at DOCKER_HOST answers)"
	case protocol.KindInternal:
		return "a bug in the resident; please report it with the log from --log-file"
	}
	if errors.Is(err, context.Canceled) {
		return "interrupted before it finished; run it again"
	}
	return "see the message above"
}
