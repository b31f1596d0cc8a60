package keeperbin

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// SourceDirs are the packages the keeper is built from, relative to this
// package's directory.
var SourceDirs = []string{"../cmd/keeper", "../keeperproto", "../../beneath", "../../procfs"}

// HashSources hashes the non-test Go files of SourceDirs under dir (this
// package's directory): the generator records it, a test compares it.
func HashSources(dir string) (string, error) {
	h := sha256.New()
	for _, sd := range SourceDirs {
		matches, err := filepath.Glob(filepath.Join(dir, sd, "*.go"))
		if err != nil {
			return "", err
		}
		sort.Strings(matches)
		for _, m := range matches {
			if strings.HasSuffix(m, "_test.go") {
				continue
			}
			data, err := os.ReadFile(m)
			if err != nil {
				return "", err
			}
			h.Write([]byte(filepath.ToSlash(filepath.Join(sd, filepath.Base(m))) + "\x00"))
			h.Write(data)
			h.Write([]byte{0})
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
