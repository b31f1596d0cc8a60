package docker

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// A sandbox mounting the volume swaps a directory on the path for a
// symlink to /.resident as fast as it can, while the host reads d/keeper
// in a loop. The directory's keeper is zeros of the keeper binary's size,
// mode and mtime, so that nothing but the bytes tells the two apart. No
// read may return a byte of the helper's own /.resident/keeper (or of
// anything else outside the volume); no listing may list outside it.
func TestStoreReadUnderASymlinkSwapStaysInTheVolume(t *testing.T) {
	p, _ := newTestProvider(t)
	vol := runID + "-swap"
	seedVolume(t, p, vol, map[string]string{"d/marker": "in"})
	id := create(t, p, testOwner(t), protocol.Spec{Volumes: []protocol.VolumeMount{{Name: vol, Path: "/data"}}}, nil)
	sh(t, p, id, "head -c $(stat -c %s /.resident/keeper) /dev/zero > /data/d/keeper && chmod 755 /data/d/keeper && "+
		"touch -r /.resident/keeper /data/d/keeper && ln -s /.resident /data/link")
	ctx, stop := context.WithCancel(testCtx(t))
	swapper, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"sh", "-c",
		"cd /data; echo go; while :; do mv d real; mv link d; mv d link; mv real d; done"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(); _ = collect(swapper) })
	if _, err := io.ReadFull(swapper.Stdout(), make([]byte, 3)); err != nil {
		t.Fatalf("the swapper did not start: %v", err)
	}
	var inside, refused, escaped int
	for range 80 {
		rc, err := p.ReadFile(testCtx(t), testOwner(t), vol, "d/keeper")
		if err != nil {
			if k := protocol.KindOf(err); k != protocol.KindNotFound && k != protocol.KindInvalidRequest {
				t.Errorf("read under the swap: %s %v", k, err)
			}
			refused++
			continue
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		switch {
		case err != nil:
			refused++
		case len(bytes.Trim(data, "\x00")) > 0:
			escaped++
		default:
			inside++
		}
	}
	for range 20 {
		entries, _, err := p.ListDir(testCtx(t), testOwner(t), vol, "d", 100)
		if err == nil && !strings.Contains(names(entries), "marker") {
			t.Errorf("list_dir under the swap listed outside the volume: %s", names(entries))
		}
	}
	t.Logf("80 reads under the swap: %d inside, %d refused, %d outside", inside, refused, escaped)
	if escaped > 0 {
		t.Fatalf("%d of 80 reads returned bytes from outside the volume", escaped)
	}
}

func names(entries []protocol.DirEntry) string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Name)
	}
	return strings.Join(out, ",")
}
