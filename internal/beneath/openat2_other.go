//go:build unix && !linux

package beneath

import (
	"os"

	"golang.org/x/sys/unix"
)

// dirFlags open a directory on the way for the walk (no O_PATH here).
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY

func openat2(*os.File, string, int) (int, error) { return -1, errNoOpenat2 }
