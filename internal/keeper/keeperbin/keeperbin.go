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
// architecture decides, not the resident's. The unpacked binary is kept
// for the process's life.
func For(goarch string) (Binary, error) {
	packed, err := packedFor(goarch)
	if err != nil {
		return Binary{}, err
	}
	load, _ := cache.LoadOrStore(goarch, sync.OnceValues(func() (Binary, error) { return unpack(packed) }))
	return load.(func() (Binary, error))()
}

// Load is For without the cache, for a caller that needs the bytes once
// in a long while (to fill a helper volume) and should not hold 3.5 MB
// for the rest of the process's life.
func Load(goarch string) (Binary, error) {
	packed, err := packedFor(goarch)
	if err != nil {
		return Binary{}, err
	}
	return unpack(packed)
}

func packedFor(goarch string) ([]byte, error) {
	switch goarch {
	case "amd64":
		return amd64, nil
	case "arm64":
		return arm64, nil
	}
	return nil, fmt.Errorf("no keeper for architecture %q (have amd64, arm64)", goarch)
}

// DigestFor is For(goarch).Digest without unpacking the binary (3.5 MB
// that For keeps for the process's life): what names the helper volume
// and image, so a resident whose engine already has them never unpacks.
func DigestFor(goarch string) (string, error) {
	if _, err := packedFor(goarch); err != nil {
		return "", err
	}
	return digests[goarch], nil
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
