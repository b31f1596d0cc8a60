package keeper

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// Run is what one "keeper run" is asked to do.
type Run struct {
	// Token names the run to "keeper kill" and derives its mark: NewToken.
	Token string
	// Cwd is the command's working directory, absolute in the sandbox;
	// empty for the image's.
	Cwd string
	// Stdin passes data frames on to the command's stdin.
	Stdin bool
	// Exclusive kills every other marked process of the sandbox first.
	Exclusive bool
	// Relay has the keeper copy the child's output and end after the child
	// exited, although a background child holds the output: for transports
	// (a Kubernetes exec) that end the stream only when every writer closed.
	Relay bool
	// EnvStdin has the keeper read the child's environment from env frames
	// (WriteEnv) before the control frames: for an exec that carries no
	// environment (Kubernetes), so no value sits on a command line.
	EnvStdin bool
	// Deadline, unless zero, has the keeper itself kill the tree then: it
	// holds even when nothing outside can reach the keeper any more.
	Deadline time.Time
}

// Command is the command line of the run of argv, for whatever starts
// processes in the sandbox (an engine's exec, a pod's).
func (r Run) Command(argv []string) []string {
	cmd := []string{keeperproto.Path, keeperproto.CmdRun, "-token", r.Token}
	if r.Cwd != "" {
		cmd = append(cmd, "-cwd", r.Cwd)
	}
	if r.Stdin {
		cmd = append(cmd, "-stdin")
	}
	if r.Exclusive {
		cmd = append(cmd, "-exclusive")
	}
	if r.Relay {
		cmd = append(cmd, "-relay")
	}
	if r.EnvStdin {
		cmd = append(cmd, "-env-stdin")
	}
	if !r.Deadline.IsZero() {
		cmd = append(cmd, "-deadline-ms", strconv.FormatInt(max(1, time.Until(r.Deadline).Milliseconds()), 10))
	}
	return append(append(cmd, "--"), argv...)
}

// Command is the command line of a short keeper subcommand (keeperproto's
// Cmd names), as the kill fallback and the OOM counter run it.
func Command(args ...string) []string {
	return append([]string{keeperproto.Path}, args...)
}

// NewToken is a fresh run token: random hex, so its mark is well spread.
func NewToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
