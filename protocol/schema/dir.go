package schema

import (
	"fmt"
	"os"
	"sync"
)

var chdirMu sync.Mutex

// withDir runs fn with the process's working directory at dir. The comment
// walk of the schema library resolves package paths from the working
// directory; generation is a one-shot tool step, never on a serving path.
func withDir(dir string, fn func() error) error {
	chdirMu.Lock()
	defer chdirMu.Unlock()
	prev, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("schema: getwd: %w", err)
	}
	if err := os.Chdir(dir); err != nil {
		return fmt.Errorf("schema: chdir: %w", err)
	}
	defer os.Chdir(prev)
	return fn()
}
