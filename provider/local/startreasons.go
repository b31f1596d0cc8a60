package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Why an exec cannot start, told apart as a shell tells them (127 for a
// missing program, 126 for one it cannot execute) by the protocol's reasons.

// missingProgram: no such program on the sandbox's PATH, or at its path.
func missingProgram(name, why string) error {
	return protocol.ReasonError(protocol.ReasonNoSuchFile, protocol.FieldArgv, fmt.Sprintf("exec %q: %s", name, why), nil)
}

// programError says why the program at hostPath (argv[0] with a slash)
// cannot run: it is missing, or it is there and not an executable file.
func programError(name, hostPath string) error {
	if _, err := os.Stat(hostPath); errors.Is(err, fs.ErrNotExist) {
		return missingProgram(name, "no such file or directory")
	}
	return protocol.ReasonError(protocol.ReasonPermissionDenied, protocol.FieldArgv, fmt.Sprintf("exec %q: not an executable file", name), nil)
}

// cwdError is a working directory that cannot be entered, about cwd.
func cwdError(cwd string, err error) error {
	if reason, ok := provider.ReasonOfErrno(err); ok {
		return protocol.ReasonError(reason, protocol.FieldCwd, fmt.Sprintf("exec cwd %q: %s", cwd, reasonText(reason)), err)
	}
	return fsError("exec cwd", cwd, err)
}

func cwdNotDirectory(cwd string) error {
	return protocol.ReasonError(protocol.ReasonNotDirectory, protocol.FieldCwd, fmt.Sprintf("exec cwd %q: not a directory", cwd), nil)
}
