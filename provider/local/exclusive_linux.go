//go:build linux

package local

import "github.com/resident-dev/resident/protocol"

// errUnisolatedExclusive refuses what local cannot honour without bwrap: a
// process can leave every set the resident could find it by.
var errUnisolatedExclusive = protocol.Errorf(protocol.KindInvalidRequest,
	"exec exclusive: local runs execs unisolated here (no working bwrap), so it cannot stop every other process of the sandbox; install %s", bwrapPackage)
