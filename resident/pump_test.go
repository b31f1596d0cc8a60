package resident

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
)

// TestPumpBufferFitsReads: the buffer doubles on full reads up to its cap
// and keeps its size through short reads.
func TestPumpBufferFitsReads(t *testing.T) {
	if pumpMinBufferBytes<<(pumpSizeClasses-1) != pumpBufferBytes {
		t.Fatalf("%d size classes do not span %d to %d bytes", pumpSizeClasses, pumpMinBufferBytes, pumpBufferBytes)
	}
	b := newPumpBuffer()
	defer b.release()
	for _, step := range []struct {
		read, want int
	}{
		{100, 4 << 10},
		{4 << 10, 8 << 10},
		{8 << 10, 16 << 10},
		{16 << 10, 32 << 10},
		{32 << 10, 64 << 10},
		{64 << 10, 64 << 10}, // the cap
		{100, 64 << 10},
	} {
		b.fit(step.read, pumpBufferBytes)
		if len(b.buf) != step.want {
			t.Fatalf("after a read of %d: buffer %d, want %d", step.read, len(b.buf), step.want)
		}
	}
}

// TestPumpBufferShrinksToItsShare: with many pumps running, a buffer
// grows only to its share of pumpBudget, and one that grew before the
// others started goes down to it at its next read.
func TestPumpBufferShrinksToItsShare(t *testing.T) {
	for _, tc := range []struct {
		active int64
		want   int
	}{
		{0, pumpBufferBytes}, {1, pumpBufferBytes}, {2, pumpBufferBytes}, {32, pumpBufferBytes},
		{33, 32 << 10}, {200, 8 << 10}, {100000, pumpMinBufferBytes},
	} {
		if got := pumpLimit(tc.active); got != tc.want {
			t.Errorf("pumpLimit(%d) = %d, want %d", tc.active, got, tc.want)
		}
	}
	b := newPumpBuffer()
	defer b.release()
	for _, step := range []struct {
		read, limit, want int
	}{
		{4 << 10, pumpBufferBytes, 8 << 10},
		{8 << 10, pumpBufferBytes, 16 << 10},
		{16 << 10, 8 << 10, 8 << 10}, // others started: down to the share
		{8 << 10, 8 << 10, 8 << 10},  // full, but at its share
		{100, pumpBufferBytes, 8 << 10},
		{8 << 10, pumpBufferBytes, 16 << 10}, // they ended: grows again
	} {
		b.fit(step.read, step.limit)
		if len(b.buf) != step.want {
			t.Fatalf("after a read of %d under a limit of %d: buffer %d, want %d", step.read, step.limit, len(b.buf), step.want)
		}
	}
}

// TestPumpBufferPoolsKeepSizes: a buffer released at one size is never
// handed out for another, whatever the pools hold.
func TestPumpBufferPoolsKeepSizes(t *testing.T) {
	for size := pumpMinBufferBytes; size <= pumpBufferBytes; size *= 2 {
		putPumpBuffer(make([]byte, size))
	}
	for size := pumpMinBufferBytes; size <= pumpBufferBytes; size *= 2 {
		if b := getPumpBuffer(size); len(b) != size {
			t.Fatalf("getPumpBuffer(%d) has %d bytes", size, len(b))
		}
	}
}

// framesWriter records what a frameStream writes and can be made to fail.
type framesWriter struct {
	bytes.Buffer
	fail error
}

func (w *framesWriter) Read([]byte) (int, error) { return 0, io.EOF }
func (w *framesWriter) Close() error             { return nil }
func (w *framesWriter) Write(p []byte) (int, error) {
	if w.fail != nil {
		return 0, w.fail
	}
	return w.Buffer.Write(p)
}

func newSenderSession(t *testing.T, w *framesWriter) *session {
	t.Helper()
	opts := Options{Provider: newFake(), Logger: zap.NewNop()}
	opts.fill()
	s := newSession(opts)
	s.stream = newFrameStream(w, opts.Limits.MaxFrameBytes, opts.Scrubber, s.log)
	return s
}

// outputFrames decodes every exec/output frame written to w.
func outputFrames(t *testing.T, w *framesWriter) []string {
	t.Helper()
	r := protocol.NewFrameReader(bytes.NewReader(w.Bytes()), 1<<20)
	var out []string
	for {
		body, err := r.Read()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var msg struct {
			Params struct {
				Data []byte `json:"data"`
			} `json:"params"`
		}
		if err := json.Unmarshal(body, &msg); err != nil {
			t.Fatalf("frame %q: %v", body, err)
		}
		out = append(out, string(msg.Params.Data))
	}
}

// TestOutputSenderOneFramePerRead: what a scrubber emits in pieces for one
// read leaves as one frame, whatever the length of the first piece modulo
// base64's three bytes, and a lone small piece leaves at the flush.
func TestOutputSenderOneFramePerRead(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pieces []string
		frames []string
	}{
		{"head of 1", []string{"a", strings.Repeat("b", 2000)}, []string{"a" + strings.Repeat("b", 2000)}},
		{"head of 2", []string{"ab", strings.Repeat("c", 2000)}, []string{"ab" + strings.Repeat("c", 2000)}},
		{"head of 3", []string{"abc", strings.Repeat("d", 2000)}, []string{"abc" + strings.Repeat("d", 2000)}},
		{"two small", []string{"ab", "c"}, []string{"abc"}},
		{"short second", []string{"a", "b"}, []string{"ab"}},
		{"lone small", []string{"tail"}, []string{"tail"}},
		{"large alone", []string{strings.Repeat("e", 2000)}, []string{strings.Repeat("e", 2000)}},
	} {
		w := &framesWriter{}
		send := newSenderSession(t, w).outputSender("e1", "stdout")
		for _, p := range tc.pieces {
			if err := send.emit([]byte(p)); err != nil {
				t.Fatal(err)
			}
		}
		if err := send.flush(); err != nil {
			t.Fatal(err)
		}
		if got := outputFrames(t, w); !slices.Equal(got, tc.frames) {
			t.Errorf("%s: frames %.30q, want %.30q", tc.name, got, tc.frames)
		}
	}
}

// TestOutputSenderStopsAfterFailure: after the host stops reading, neither
// emit nor flush tries again, and both report the failure.
func TestOutputSenderStopsAfterFailure(t *testing.T) {
	boom := errors.New("broken pipe")
	w := &framesWriter{fail: boom}
	send := newSenderSession(t, w).outputSender("e1", "stdout")
	if err := send.emit([]byte("small")); err != nil {
		t.Fatalf("a waiting chunk failed early: %v", err)
	}
	if err := send.flush(); !errors.Is(err, boom) {
		t.Fatalf("flush = %v, want %v", err, boom)
	}
	w.fail = nil
	if err := send.emit([]byte(strings.Repeat("x", 2000))); !errors.Is(err, boom) {
		t.Fatalf("emit after failure = %v", err)
	}
	if err := send.flush(); !errors.Is(err, boom) || w.Len() != 0 {
		t.Fatalf("flush after failure = %v, wrote %d bytes", err, w.Len())
	}
}
