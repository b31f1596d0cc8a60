package resident

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/resident-dev/resident/protocol"
)

// A file of many reads arrives whole and in order, described by one hash,
// with one store/data frame per read of the provider.
func TestReadFileStreamsManyChunksInOrder(t *testing.T) {
	fake := newFake()
	var content strings.Builder
	for i := 0; content.Len() < 5*pumpBufferBytes+123; i++ {
		content.WriteString(strings.Repeat(string(rune('a'+i%26)), 997))
	}
	fake.storeFiles["big"] = content.String()
	h := startHost(t, fake)
	h.initialize(nil)
	var file protocol.ReadFileResult
	h.call(protocol.MethodStoreReadFile, map[string]any{"root": "vol", "path": "big", "stream_id": "s1"}, &file)
	sum := sha256.Sum256([]byte(content.String()))
	if file.Size != int64(content.Len()) || file.SHA256 != hex.EncodeToString(sum[:]) || file.Redacted {
		t.Fatalf("read_file: %+v", file)
	}
	var got []byte
	frames := h.notifications(protocol.NotifyStoreData)
	for _, n := range frames {
		var p struct {
			Data string `json:"data"`
		}
		if err := json.Unmarshal(n.Params, &p); err != nil {
			t.Fatal(err)
		}
		b, err := base64.StdEncoding.DecodeString(p.Data)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b...)
	}
	if string(got) != content.String() {
		t.Fatalf("store/data carried %d bytes, not the file's %d (or not in order)", len(got), content.Len())
	}
	if len(frames) > 7 {
		t.Errorf("%d frames for a file of 6 reads", len(frames))
	}
}

// A provider stream that breaks mid-file is transient, after what did
// arrive was sent.
func TestReadFileBrokenStreamIsTransient(t *testing.T) {
	fake := newFake()
	fake.storeReaders["broken"] = func() io.ReadCloser {
		return io.NopCloser(io.MultiReader(strings.NewReader("first part"), errReader{errors.New("connection reset")}))
	}
	h := startHost(t, fake)
	h.initialize(nil)
	msg := h.callErr(protocol.MethodStoreReadFile, map[string]any{"root": "vol", "path": "broken", "stream_id": "s1"}, protocol.KindTransient)
	if !strings.Contains(msg, "connection reset") {
		t.Fatalf("message: %s", msg)
	}
}

// Cancelling a read blocked on the provider answers cancelled and closes
// the provider's stream under the blocked Read.
func TestReadFileCancelClosesTheProviderStream(t *testing.T) {
	fake := newFake()
	blocked := newBlockingReader()
	fake.storeReaders["slow"] = func() io.ReadCloser { return blocked }
	h := startHost(t, fake)
	h.initialize(nil)
	id := h.send(protocol.MethodStoreReadFile, map[string]any{"root": "vol", "path": "slow", "stream_id": "s1"})
	<-blocked.reading
	h.notify(protocol.MethodCancelRequest, map[string]any{"id": mustAtoi(id)})
	m := h.await(id)
	if m.Error == nil || m.Error.Data.Kind != protocol.KindCancelled {
		t.Fatalf("cancelled read_file: %+v", m)
	}
	<-blocked.closed
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// blockingReader blocks every Read until Close, as a frozen engine would
// until the provider's stream is closed.
type blockingReader struct {
	reading, closed chan struct{}
	once, closeOnce sync.Once
}

func newBlockingReader() *blockingReader {
	return &blockingReader{reading: make(chan struct{}), closed: make(chan struct{})}
}

func (b *blockingReader) Read([]byte) (int, error) {
	b.once.Do(func() { close(b.reading) })
	<-b.closed
	return 0, io.ErrClosedPipe
}

func (b *blockingReader) Close() error {
	b.closeOnce.Do(func() { close(b.closed) })
	return nil
}
