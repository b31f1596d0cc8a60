package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// install copies this keeper into a directory: the init container of a
// Kubernetes sandbox runs it from the keeper image, so the sandbox's image
// (which may have no shell, no cp) gets the keeper in a volume of its own.
// The copy is written beside its final name and renamed, so the sandbox
// container never sees half a keeper.
func install(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: keeper install DIR")
		return 2
	}
	if err := installInto(args[0]); err != nil {
		fmt.Fprintln(os.Stderr, "keeper install:", err)
		return 1
	}
	return 0
}

func installInto(dir string) error {
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		return err
	}
	defer self.Close()
	tmp, err := os.CreateTemp(dir, ".keeper-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, self); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o555); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, "keeper"))
}
