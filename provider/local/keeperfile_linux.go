//go:build linux

package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/resident-dev/resident/internal/keeper/keeperbin"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// keeperDir returns the host directory holding the keeper binary this
// resident embeds, extracted on first use: StateDir/local/keeper/<digest>/.
// A sandbox sees it read-only at keeperproto.Dir. Named by digest, so a
// newer resident never overwrites the binary an older sandbox's init runs,
// and two residents extracting at once write the same bytes.
func (p *Provider) keeperDir() (string, error) {
	p.keeperOnce.Do(func() {
		bin, err := keeperbin.For(runtime.GOARCH)
		if err != nil {
			p.keeperErr = err
			return
		}
		dir := filepath.Join(p.keepers, bin.Digest)
		name := filepath.Base(keeperproto.Path)
		if info, err := os.Stat(filepath.Join(dir, name)); err == nil && info.Size() == int64(len(bin.Data)) {
			p.keeperPath = dir
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			p.keeperErr = fmt.Errorf("keeper: %w", err)
			return
		}
		// The state directory above is 0700: only the resident's user
		// reaches the file, and the sandbox only through its read-only bind.
		if err := writeFileAtomic(dir, name, bin.Data, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			p.keeperErr = fmt.Errorf("keeper: %w", err)
			return
		}
		p.keeperPath = dir
	})
	return p.keeperPath, p.keeperErr
}

// keeperBinds are bwrap's options that show the keeper at keeperproto.Dir.
func keeperBinds(dir string) []string {
	return []string{"--ro-bind", dir, keeperproto.Dir}
}
