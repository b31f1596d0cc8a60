package docker

import (
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// How a sandbox's execs reach its keeper, recorded at create in
// LabelExecMode: a sandbox made by an older resident has no such label and
// keeps the exec path it was made for.
const (
	// ExecModeChannel: the keeper is the sandbox's init ("keeper serve
	// -stdio") and every exec and file operation runs over one channel on
	// the container's attach stream (channel.go).
	ExecModeChannel = "channel"
	// ExecModeExec: docker-init runs the keeper's "alive", and every exec
	// is a docker exec of "keeper run" (exec.go): the fallback.
	ExecModeExec = "exec"
)

// LabelExecMode records a sandbox's exec mode (ExecModeChannel or
// ExecModeExec); absent on sandboxes made before the channel: exec.
const LabelExecMode = labelPrefix + "exec-mode"

// OptExec is --provider-opt exec=...: "channel" (the default) makes new
// sandboxes with the keeper channel, falling back by itself to "exec" for
// one where the channel cannot be had; "exec" keeps docker exec for all.
var OptExec = provider.Option[string]{Name: "exec", Default: ExecModeChannel,
	Doc: `how execs reach a new sandbox's keeper: "channel" (one multiplexed channel on the container's attach stream; falls back to exec where it cannot be had) or "exec" (a docker exec per command)`}

// modeOfLabels is the exec mode a sandbox's labels say.
func modeOfLabels(labels map[string]string) string {
	if labels[LabelExecMode] == ExecModeChannel {
		return ExecModeChannel
	}
	return ExecModeExec
}

// modeOf is a known sandbox's exec mode (the caller made it known).
func (p *Provider) modeOf(id string) string {
	v, _ := p.known.label(id, LabelExecMode)
	return modeOfLabels(map[string]string{LabelExecMode: v})
}

// refuseOnExecPath refuses what only the channel gives (a user, a
// terminal, a detached exec) for a sandbox on the exec path, by name.
func refuseOnExecPath(id string, req provider.ExecRequest) error {
	what := ""
	switch {
	case req.Detach:
		what = "a detached exec"
	case req.User != "":
		what = "an exec user"
	case req.TTY != nil:
		what = "a terminal"
	default:
		return nil
	}
	return protocol.Errorf(protocol.KindInvalidRequest, "exec: sandbox %s runs its execs through docker exec (made by an older resident, with exec=exec, or where the keeper channel could not be had), which cannot give %s; create a new sandbox", id[:12], what)
}
