package docker

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// The request's end (the host's $/cancelRequest) in the middle of a read
// ends the stream and removes the helper; so does closing the reader early.
func TestStoreArchiveCancelAndCloseRemoveTheHelper(t *testing.T) {
	p, _ := newTestProvider(t)
	vol := runID + "-cancel"
	const size = 24 << 20
	seedVolume(t, p, vol, map[string]string{"big": randomText(size)})

	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	rc, err := p.ReadFile(ctx, testOwner(t), vol, "big")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	af, ok := rc.(*archiveFile)
	if !ok {
		t.Fatalf("took the keeper path (%T)", rc)
	}
	if _, err := io.ReadFull(rc, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	cancel()
	awaitHelperGone(t, p, af.helperID)
	n, err := io.Copy(io.Discard, rc)
	if err == nil || n+4096 >= size {
		t.Fatalf("after the cancel the read went on: %d more bytes, %v", n, err)
	}

	rc, err = p.ReadFile(testCtx(t), testOwner(t), vol, "big")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(rc, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if st := helperState(t, p, rc.(*archiveFile).helperID); st != "gone" {
		t.Fatalf("helper is %q after an early Close", st)
	}
}

// awaitHelperGone waits until the engine no longer has the container.
func awaitHelperGone(t *testing.T, p *Provider, id string) {
	t.Helper()
	for range 300 {
		if helperState(t, p, id) == "gone" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("helper %s still there 30s after its read ended", id[:12])
}

// An engine that freezes mid-read: the request's end still ends the read,
// and the helper goes once the engine moves again.
func TestStoreArchiveFrozenEngineMidRead(t *testing.T) {
	needEngine(t)
	px := startProxy(t)
	p, _ := newTestProvider(t, px.host())
	p.timing.api = 5 * time.Second
	vol := runID + "-archfrozen"
	seedVolume(t, p, vol, map[string]string{"big": randomText(24 << 20)})

	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	rc, err := p.ReadFile(ctx, testOwner(t), vol, "big")
	if err != nil {
		t.Fatal(err)
	}
	af, ok := rc.(*archiveFile)
	if !ok {
		rc.Close()
		t.Fatalf("took the keeper path (%T)", rc)
	}
	if _, err := io.ReadFull(rc, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	expectCutRead(t, px, rc, cancel)
	awaitHelperGone(t, p, af.helperID)
}

// A file that changed between the walk and the read (here: a walk result
// one nanosecond off) goes to the keeper in the same helper, whose archive
// stream, opened and abandoned, must not hold the container: the engine
// locks it while it streams.
func TestStoreArchiveAbandonedStreamLetsTheKeeperStart(t *testing.T) {
	p, _ := newTestProvider(t)
	vol := runID + "-changed"
	data := randomText(24 << 20)
	seedVolume(t, p, vol, map[string]string{"big": data})
	id, err := p.createStoreHelper(testCtx(t), vol, "big", "cat", "--", "big")
	if err != nil {
		t.Fatal(err)
	}
	want, err := p.walkPlain(testCtx(t), id, "big")
	if err != nil {
		p.removeHelper(id)
		t.Fatal(err)
	}
	want.Mtime = want.Mtime.Add(time.Nanosecond)
	if _, err := p.openArchive(testCtx(t), id, "big", want); !errors.Is(err, errUseKeeper) {
		p.removeHelper(id)
		t.Fatalf("a changed file: %v, want errUseKeeper", err)
	}
	got, err, fast := readVia(t, func() (io.ReadCloser, error) { return p.readFileKeeper(testCtx(t), id, vol, "big") })
	if err != nil || fast || got != data {
		t.Fatalf("the keeper after an abandoned archive: %d bytes, %v, archive path %v", len(got), err, fast)
	}
	awaitHelperGone(t, p, id)
}
