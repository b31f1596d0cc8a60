package resident

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// readOnlyUploader is a provider that only reads its stream, as a real one
// does: it never looks at ctx while it waits for the next bytes.
type readOnlyUploader struct {
	*fakeProvider
	ended chan error
}

func (b *readOnlyUploader) Info() provider.Info {
	info := b.fakeProvider.Info()
	info.Capabilities.Upload = true
	return info
}

func (b *readOnlyUploader) WriteFileFrom(_ context.Context, _, _ string, _ *uint32, r io.Reader) (int64, error) {
	n, err := io.Copy(io.Discard, r)
	b.ended <- err
	return n, err
}

// A write_file cancelled while its provider waits for the next upload/data
// must end that wait (with the cancel), or the provider would hold the
// half-written file open for good.
func TestCancelledStreamedWriteFileEndsTheProvidersRead(t *testing.T) {
	prov := &readOnlyUploader{fakeProvider: newFake(), ended: make(chan error, 1)}
	h := startHost(t, prov)
	h.initialize(nil)
	box := newBox(t, h)
	id := h.send(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": box, "path": "f", "stream_id": "up-1"})
	h.call(protocol.MethodUploadData, map[string]any{"stream_id": "up-1", "data": []byte("half")}, nil)
	h.notify(protocol.MethodCancelRequest, map[string]any{"id": json.Number(id)})
	select {
	case err := <-prov.ended:
		if err == nil {
			t.Fatal("the provider's read ended cleanly after a cancel; want an error so it removes what it wrote")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the provider still waits for upload data 30 s after the write_file was cancelled")
	}
	if m := h.await(id); m.Error == nil || m.Error.Data.Kind != protocol.KindCancelled {
		t.Fatalf("cancelled write_file answered %+v; want cancelled", m)
	}
}
