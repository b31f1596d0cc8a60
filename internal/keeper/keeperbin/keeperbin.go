// Package keeperbin embeds the keeper (../cmd/keeper), prebuilt as a static
// linux binary for each architecture a Docker engine commonly runs on. The
// provider copies it into a read-only helper volume that every sandbox
// mounts, so it works on any image, remote engines included, without a
// toolchain at run time.
//
// After changing ../cmd/keeper or ../keeperproto, run
//
//	go generate ./internal/keeper/keeperbin
//
// TestEmbeddedKeeperIsCurrent fails until you do.
package keeperbin

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
)

//go:generate go run ./gen

//go:embed keeper_linux_amd64.gz
var amd64 []byte

//go:embed keeper_linux_arm64.gz
var arm64 []byte

// Binary is the keeper for one architecture.
type Binary struct {
	Data []byte
	// Digest is the hex sha256 of Data; the helper volume and image are
	// named after it, so a new keeper never meets an old one.
	Digest string
}

var cache sync.Map // GOARCH -> func() (Binary, error)

// For returns the keeper for a GOARCH name ("amd64", "arm64"); the engine's
// architecture decides, not the resident's.
func For(goarch string) (Binary, error) {
	var packed []byte
	switch goarch {
	case "amd64":
		packed = amd64
	case "arm64":
		packed = arm64
	default:
		return Binary{}, fmt.Errorf("no keeper for architecture %q (have amd64, arm64)", goarch)
	}
	load, _ := cache.LoadOrStore(goarch, sync.OnceValues(func() (Binary, error) { return unpack(packed) }))
	return load.(func() (Binary, error))()
}

func unpack(packed []byte) (Binary, error) {
	zr, err := gzip.NewReader(bytes.NewReader(packed))
	if err != nil {
		return Binary{}, fmt.Errorf("keeper: %w", err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return Binary{}, fmt.Errorf("keeper: %w", err)
	}
	sum := sha256.Sum256(data)
	return Binary{Data: data, Digest: hex.EncodeToString(sum[:])}, nil
}
