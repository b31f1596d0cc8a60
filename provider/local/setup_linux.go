//go:build linux

package local

import "time"

// setupAttempts is how often an exec tries bwrap. Its setup can fail for
// reasons of the moment: it remounts every host mount below / in its own
// namespace, and one that the host unmounts meanwhile (a container
// stopping) fails the remount with EINVAL.
const setupAttempts = 3

// setupTimeout bounds bwrap's setup; it normally takes milliseconds.
const setupTimeout = 30 * time.Second

// setupError is a sandbox init that ended before serving its channel:
// bwrap could not make the namespaces, or the keeper could not start. Its
// message is what they wrote to the sandbox's init.log.
type setupError struct{ msg string }

func (e *setupError) Error() string { return "bwrap could not set up the namespace: " + e.msg }
