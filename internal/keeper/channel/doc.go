// Package channel is the resident's side of the keeper channel: one
// long-lived, multiplexed connection to the keeper that is a sandbox's
// init ("keeper serve"), carrying every exec (stdin, stdout, stderr,
// signals, resize, exit status) and file operation of that sandbox.
//
// It knows nothing of the transport: Open takes an io.ReadWriteCloser
// (Docker's attach stream, a Unix socket, a pod's attach stream, a pipe
// in tests). The frames are keeperproto's (frame.go, messages.go).
//
// Rules the callers rely on:
//   - Open takes the channel over: the keeper bumps its lease generation
//     and refuses every frame of an older one, telling its sender, whose
//     Conn then fails with ErrFenced (which is ErrBroken too).
//   - Each exec's output has its own credit window: a caller that stops
//     reading one exec stalls that exec only; memory stays bounded.
//   - A broken channel fails every open exec and call with ErrBroken
//     (providers answer transient); Done is closed and Err says why. The
//     caller opens a new Conn for the next exec.
//   - Execs not started with Detach are killed (their whole tree) when
//     the channel that started them breaks or is taken over, or when the
//     holder stays silent for its lease (Options.Lease: the Conn pings),
//     which is how a keeper behind an attach stream learns its holder died.
//   - Detached execs outlive every holder; their output is a sequence of
//     offset-tagged Chunks (Exec.Next), kept in the keeper's ring for
//     Attach from an offset.
//
// The wire and its rules are described in docs/keeper-channel.md.
package channel
