package wire

import (
	"encoding/json"
	"io"
	"sync"

	"github.com/resident-dev/resident/protocol"
)

// Stream is a jsonrpc2.ObjectStream of Content-Length frames with a size
// cap on both directions (the library's own codec has none, and can
// desynchronise on a bad header).
type Stream struct {
	reader *protocol.FrameReader
	closer io.Closer
	max    int

	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// NewStream frames messages over r and w; closer closes both ends.
func NewStream(r io.Reader, w io.Writer, closer io.Closer, maxFrame int) *Stream {
	return &Stream{reader: protocol.NewFrameReader(r, maxFrame), w: w, closer: closer, max: maxFrame}
}

func (s *Stream) ReadObject(v any) error {
	body, err := s.reader.Read()
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

func (s *Stream) WriteObject(obj any) error {
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if len(body) > s.max {
		return protocol.Errorf(protocol.KindInvalidRequest, "message of %d bytes is over the %d byte frame limit", len(body), s.max)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = protocol.AppendFrame(s.buf[:0], body)
	_, err = s.w.Write(s.buf)
	if cap(s.buf) > 1<<20 {
		s.buf = nil // one large message must not pin its buffer
	}
	return err
}

func (s *Stream) Close() error { return s.closer.Close() }
