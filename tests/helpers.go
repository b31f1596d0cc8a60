package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// UniqueInstall is an install id of prefix, made unique by the clock.
func UniqueInstall(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1e9)
}

// RemoveVolumesLater removes Docker volumes when the test ends (after the
// resident has terminated its sandboxes).
func RemoveVolumesLater(t *testing.T, names ...string) {
	t.Cleanup(func() {
		cli, err := client.New(client.FromEnv)
		if err != nil {
			return
		}
		defer cli.Close()
		for _, n := range names {
			for range 20 { // the sandbox may still be going away
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := cli.VolumeRemove(ctx, n, client.VolumeRemoveOptions{Force: true})
				cancel()
				if err == nil || strings.Contains(err.Error(), "no such volume") {
					break
				}
				time.Sleep(250 * time.Millisecond)
			}
		}
	})
}

// HostCanary writes a file on the host, outside any state directory, whose
// content must never reach the host through the resident.
func HostCanary(t *testing.T) (dir, path, content string) {
	t.Helper()
	dir = t.TempDir()
	content = fmt.Sprintf("HOST-CANARY-%d-never-read", time.Now().UnixNano())
	path = filepath.Join(dir, "canary.txt")
	if err := os.WriteFile(path, []byte(content+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, path, content
}
