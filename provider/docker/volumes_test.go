package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

func TestStoreListsOnlyManagedVolumes(t *testing.T) {
	p, _ := newTestProvider(t)
	ctx := testCtx(t)
	managed, foreign := runID+"-managed", runID+"-foreign"
	seedVolume(t, p, managed, map[string]string{"f": "x"})
	if _, err := p.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: foreign, Labels: map[string]string{"resident-test-run": runID}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = p.cli.VolumeRemove(context.Background(), foreign, client.VolumeRemoveOptions{Force: true})
	})
	vols, err := p.ListVolumes(ctx, testOwner(t))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, v := range vols {
		names = append(names, v.Name)
	}
	if !slices.Contains(names, managed) || slices.Contains(names, foreign) || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "resident-keeper-") }) {
		t.Fatalf("ListVolumes = %v", names)
	}
	if _, _, err := p.ListDir(ctx, testOwner(t), foreign, "", 10); protocol.KindOf(err) != protocol.KindNotFound {
		t.Errorf("ListDir on a volume we do not manage: %v", err)
	}
	_, err = p.Create(ctx, protocol.Spec{Image: testImage, Volumes: []protocol.VolumeMount{{Name: foreign, Path: "/data"}}}, testOwner(t), nil)
	if protocol.KindOf(err) != protocol.KindNotFound || err.Error() != provider.VolumeNotFound(foreign).Error() {
		t.Errorf("mounting a volume we did not create, not granted: %v; want it missing", err)
	}
}

// A large file streams: the first bytes come long before the last could,
// closing early stops the helper, and the whole file reads back exactly.
func TestStoreStreamsLargeFiles(t *testing.T) {
	p, _ := newTestProvider(t)
	vol := runID + "-large"
	seedVolume(t, p, vol, map[string]string{"seed": ""})
	id := create(t, p, testOwner(t), protocol.Spec{Volumes: []protocol.VolumeMount{{Name: vol, Path: "/data"}}}, nil)
	const size = 256 << 20
	sum := sh(t, p, id, "head -c 268435456 /dev/urandom > /data/big && sha256sum /data/big | cut -d' ' -f1")

	start := time.Now()
	rc, err := p.ReadFile(testCtx(t), testOwner(t), vol, "big")
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 4096)
	if _, err := io.ReadFull(rc, first); err != nil {
		t.Fatal(err)
	}
	firstAfter := time.Since(start)
	rc.Close()

	rc, err = p.ReadFile(testCtx(t), testOwner(t), vol, "big")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, rc)
	rc.Close()
	if err != nil || n != size || hex.EncodeToString(h.Sum(nil))+"\n" != sum {
		t.Fatalf("read %d bytes, err %v, sha256 %x; want %d bytes, %s", n, err, h.Sum(nil), size, sum)
	}
	t.Logf("256 MiB: first 4 KiB after %s, all of it in %s", firstAfter.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

func TestStoreListDirReadsOnlyWhatItReturns(t *testing.T) {
	p, _ := newTestProvider(t)
	vol := runID + "-wide"
	seedVolume(t, p, vol, map[string]string{"seed": ""})
	id := create(t, p, testOwner(t), protocol.Spec{Volumes: []protocol.VolumeMount{{Name: vol, Path: "/data"}}}, nil)
	sh(t, p, id, "mkdir /data/wide && cd /data/wide && i=0; while [ $i -lt 5000 ]; do : > f$i; i=$((i+1)); done")
	entries, truncated, err := p.ListDir(testCtx(t), testOwner(t), vol, "wide", 10)
	if err != nil || len(entries) != 10 || !truncated {
		t.Fatalf("ListDir(limit 10) = %d entries, truncated %v, %v", len(entries), truncated, err)
	}
	entries, truncated, err = p.ListDir(testCtx(t), testOwner(t), vol, "wide", 5000)
	if err != nil || len(entries) != 5000 || truncated {
		t.Fatalf("ListDir(limit 5000) = %d entries, truncated %v, %v", len(entries), truncated, err)
	}
	if _, err := p.ReadFile(testCtx(t), testOwner(t), vol, "../etc/passwd"); protocol.KindOf(err) != protocol.KindInvalidRequest {
		t.Fatalf("..: %v", err)
	}
}

// Read-only volume mounts are honoured.
func TestReadOnlyVolumeMount(t *testing.T) {
	p, _ := newTestProvider(t)
	vol := runID + "-ro"
	seedVolume(t, p, vol, map[string]string{"f": "data"})
	id := create(t, p, testOwner(t), protocol.Spec{Volumes: []protocol.VolumeMount{{Name: vol, Path: "/ro", ReadOnly: true}}}, nil)
	r := run(t, testCtx(t), p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "cat /ro/f; echo x > /ro/g"}})
	if r.stdout != "data" || r.status.Code == 0 {
		t.Fatalf("read-only volume: %+v", r)
	}
	if err := p.WriteFile(testCtx(t), id, "/ro/h", []byte("x"), nil); protocol.KindOf(err) != protocol.KindInvalidRequest {
		t.Fatalf("write_file into a read-only volume: %v", err)
	}
}
