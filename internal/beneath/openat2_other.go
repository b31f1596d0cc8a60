//go:build unix && !linux

package beneath

import "os"

func openat2(*os.File, string, int) (int, error) { return -1, errNoOpenat2 }
