package local_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// A goroutine (a sandbox process would do the same) swaps a directory on
// the path for a symlink, to a directory outside the volume and to a decoy
// inside it, as fast as it can while reads and listings loop. Every read
// that succeeds returns the directory's own file: never the outside one,
// never one reached through a link.
func TestStoreUnderASymlinkSwapReadsOnlyThePath(t *testing.T) {
	state, outside := t.TempDir(), t.TempDir()
	// The volume is made by hand below: the operator allows it.
	p := openWith(t, state, func(c *provider.Config) { c.AllowVolumes = []provider.VolumeGrant{{Name: "box"}} })
	vol := filepath.Join(state, "local", "volumes", "box")
	must(t, os.MkdirAll(filepath.Join(vol, "d"), 0o755))
	must(t, os.MkdirAll(filepath.Join(vol, "decoy"), 0o755))
	must(t, os.WriteFile(filepath.Join(vol, "d", "f"), []byte("inside"), 0o644))
	must(t, os.WriteFile(filepath.Join(vol, "d", "marker"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(vol, "decoy", "f"), []byte("DECOY"), 0o644))
	must(t, os.WriteFile(filepath.Join(outside, "f"), []byte(secret), 0o644))
	must(t, os.Symlink(outside, filepath.Join(vol, "out")))
	must(t, os.Symlink("decoy", filepath.Join(vol, "in")))
	at := func(n string) string { return filepath.Join(vol, n) }
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, link := range []string{"out", "in"} {
				_ = os.Rename(at("d"), at("park"))
				_ = os.Rename(at(link), at("d"))
				_ = os.Rename(at("d"), at(link))
				_ = os.Rename(at("park"), at("d"))
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	c := context.Background()
	var inside, refused int
	for range 2000 {
		rc, err := p.ReadFile(c, owner, "box", "d/f")
		if err != nil {
			if k := protocol.KindOf(err); k != protocol.KindNotFound && k != protocol.KindInvalidRequest {
				t.Fatalf("read under the swap: %s %v", k, err)
			}
			refused++
			continue
		}
		data, _ := io.ReadAll(rc)
		rc.Close()
		if string(data) != "inside" {
			t.Fatalf("a read under the swap returned %q", data)
		}
		inside++
		if entries, _, err := p.ListDir(c, owner, "box", "d", 10); err == nil && (len(entries) != 2 || entries[1].Name != "marker") {
			t.Fatalf("a listing under the swap listed %v", entries)
		}
	}
	t.Logf("2000 reads under the swap: %d inside, %d refused", inside, refused)
}
