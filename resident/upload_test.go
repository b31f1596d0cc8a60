package resident

import (
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
)

// upload/data answers only once the provider has taken its bytes, and the
// write_file answers once the whole file is in place.
func TestStreamedUploadAnswersAsTheProviderTakesTheBytes(t *testing.T) {
	f := newFilesFake()
	f.gate, f.reading = make(chan struct{}), make(chan struct{})
	h := startHost(t, f)
	h.initialize(nil)
	id := createdBox(t, h)
	write := h.send(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": id, "path": "big.bin", "stream_id": "up"})
	first := h.send(protocol.MethodUploadData, map[string]any{"stream_id": "up", "data": []byte("part one, ")})
	<-f.reading
	// Another request answers while the provider holds the upload: the
	// session is not blocked, and the held bytes are not acknowledged.
	h.call(protocol.MethodSandboxList, map[string]any{}, nil)
	h.mu.Lock()
	_, early := h.responses[first]
	h.mu.Unlock()
	if early {
		t.Fatal("upload/data answered before the provider read its bytes")
	}
	close(f.gate)
	if m := h.await(first); m.Error != nil {
		t.Fatalf("upload/data: %s", m.Error.Message)
	}
	h.call(protocol.MethodUploadData, map[string]any{"stream_id": "up", "data": []byte("part two"), "eof": true}, nil)
	m := h.await(write)
	if m.Error != nil {
		t.Fatalf("write_file: %s", m.Error.Message)
	}
	f.fmu.Lock()
	got := f.uploaded["big.bin"]
	f.fmu.Unlock()
	if got != "part one, part two" {
		t.Fatalf("uploaded %q", got)
	}
	// The stream is gone once write_file answered.
	h.callErr(protocol.MethodUploadData, map[string]any{"stream_id": "up", "data": []byte("late")}, protocol.KindNotFound)
}

// Cancelling the write_file ends the upload: the provider's call ends with
// nothing written, and data sent after it is refused.
func TestCancelledUploadWritesNothing(t *testing.T) {
	f := newFilesFake()
	h := startHost(t, f)
	h.initialize(nil)
	id := createdBox(t, h)
	write := h.send(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": id, "path": "half.bin", "stream_id": "up"})
	h.call(protocol.MethodUploadData, map[string]any{"stream_id": "up", "data": []byte("half")}, nil)
	h.notify(protocol.MethodCancelRequest, map[string]any{"id": h.nextID - 1})
	if m := h.await(write); m.Error == nil || m.Error.Data.Kind != protocol.KindCancelled {
		t.Fatalf("cancelled write_file answered %+v", m)
	}
	f.fmu.Lock()
	_, written := f.uploaded["half.bin"]
	f.fmu.Unlock()
	if written {
		t.Fatal("a cancelled upload left a file")
	}
	h.callErr(protocol.MethodUploadData, map[string]any{"stream_id": "up", "eof": true}, protocol.KindNotFound)
}

func TestUploadRefusesDataAndStreamTogetherAndDuplicateStreams(t *testing.T) {
	f := newFilesFake()
	f.gate, f.reading = make(chan struct{}), make(chan struct{})
	h := startHost(t, f)
	h.initialize(nil)
	id := createdBox(t, h)
	h.callErr(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": id, "path": "f", "stream_id": "s", "data": []byte("x")}, protocol.KindInvalidRequest)
	first := h.send(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": id, "path": "f", "stream_id": "dup"})
	<-f.reading
	h.callErr(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": id, "path": "g", "stream_id": "dup"}, protocol.KindConflict)
	close(f.gate)
	h.call(protocol.MethodUploadData, map[string]any{"stream_id": "dup", "eof": true}, nil)
	if m := h.await(first); m.Error != nil {
		t.Fatalf("first upload: %s", m.Error.Message)
	}
}

// A provider blocked reading the stream, which never looks at ctx, is freed
// by the write_file's cancel, and keeps nothing.
func TestCancelledUploadEndsAProviderBlockedOnTheStream(t *testing.T) {
	f := newFilesFake()
	f.plainRead = true
	h := startHost(t, f)
	h.initialize(nil)
	id := createdBox(t, h)
	write := h.send(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": id, "path": "stuck.bin", "stream_id": "up"})
	h.call(protocol.MethodUploadData, map[string]any{"stream_id": "up", "data": []byte("some")}, nil)
	h.notify(protocol.MethodCancelRequest, map[string]any{"id": h.nextID - 1})
	if m := h.await(write); m.Error == nil || m.Error.Data.Kind != protocol.KindCancelled {
		t.Fatalf("cancelled write_file answered %+v", m)
	}
	f.fmu.Lock()
	defer f.fmu.Unlock()
	if _, ok := f.uploaded["stuck.bin"]; ok {
		t.Fatal("a cancelled upload left a file")
	}
}

// An upload may announce its size: the provider sees it, and the upload
// must then be exactly that long, or it fails with nothing written.
func TestUploadWithItsSize(t *testing.T) {
	f := newFilesFake()
	h := startHost(t, f)
	h.initialize(nil)
	id := createdBox(t, h)
	h.callErr(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": id, "path": "f", "data": []byte("x"), "size": 1}, protocol.KindInvalidRequest)
	h.callErr(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": id, "path": "f", "stream_id": "neg", "size": -1}, protocol.KindInvalidRequest)

	write := h.send(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": id, "path": "exact", "stream_id": "ok", "size": 11})
	h.call(protocol.MethodUploadData, map[string]any{"stream_id": "ok", "data": []byte("hello ")}, nil)
	h.call(protocol.MethodUploadData, map[string]any{"stream_id": "ok", "data": []byte("world"), "eof": true}, nil)
	if m := h.await(write); m.Error != nil {
		t.Fatalf("sized upload: %s", m.Error.Message)
	}
	f.fmu.Lock()
	got, size := f.uploaded["exact"], f.sizes["exact"]
	f.fmu.Unlock()
	if got != "hello world" || size != 11 {
		t.Fatalf("uploaded %q, announced %d to the provider", got, size)
	}

	for name, parts := range map[string][]string{"short": {"hello"}, "long": {"hello ", "world!"}} {
		write := h.send(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": id, "path": name, "stream_id": name, "size": 11})
		for i, part := range parts {
			h.send(protocol.MethodUploadData, map[string]any{"stream_id": name, "data": []byte(part), "eof": i == len(parts)-1})
		}
		m := h.await(write)
		if m.Error == nil || m.Error.Data.Kind != protocol.KindInvalidRequest || !strings.Contains(m.Error.Message, "11") {
			t.Fatalf("%s upload answered %+v", name, m)
		}
		f.fmu.Lock()
		_, written := f.uploaded[name]
		f.fmu.Unlock()
		if written {
			t.Fatalf("a %s upload left a file", name)
		}
	}
}

// A sized upload lent to the provider (LendTo, no copy of its own) holds
// the same bytes, and the same size checks, as one it reads.
func TestLentUploadWithItsSize(t *testing.T) {
	f := newFilesFake()
	f.lend = true
	h := startHost(t, f)
	h.initialize(nil)
	id := createdBox(t, h)
	// Data frames of the fast path (long enough to be cut out of the
	// frame and decoded into a recycled buffer), several in flight.
	parts := []string{strings.Repeat("a", 3000), strings.Repeat("b", 5000), strings.Repeat("c", 2000)}
	whole := strings.Join(parts, "")
	write := h.send(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": id, "path": "lent", "stream_id": "lent", "size": len(whole)})
	var sent []string
	for i, part := range parts {
		sent = append(sent, h.send(protocol.MethodUploadData, map[string]any{"stream_id": "lent", "data": []byte(part), "eof": i == len(parts)-1}))
	}
	for _, id := range sent {
		if m := h.await(id); m.Error != nil {
			t.Fatalf("upload/data: %s", m.Error.Message)
		}
	}
	if m := h.await(write); m.Error != nil {
		t.Fatalf("lent upload: %s", m.Error.Message)
	}
	f.fmu.Lock()
	got, lent := f.uploaded["lent"], f.lent
	f.fmu.Unlock()
	if got != whole || lent != 1 {
		t.Fatalf("uploaded %d bytes (want %d), lent %d times", len(got), len(whole), lent)
	}

	for name, parts := range map[string][]string{"short": {"hello"}, "long": {"hello ", "world!"}, "long_in_one": {"hello world!"}} {
		write := h.send(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": id, "path": name, "stream_id": name, "size": 11})
		for i, part := range parts {
			h.send(protocol.MethodUploadData, map[string]any{"stream_id": name, "data": []byte(part), "eof": i == len(parts)-1})
		}
		m := h.await(write)
		if m.Error == nil || m.Error.Data.Kind != protocol.KindInvalidRequest || !strings.Contains(m.Error.Message, "11") {
			t.Fatalf("%s lent upload answered %+v", name, m)
		}
		f.fmu.Lock()
		_, written := f.uploaded[name]
		f.fmu.Unlock()
		if written {
			t.Fatalf("a %s lent upload left a file", name)
		}
	}
}
