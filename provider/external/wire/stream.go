package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/resident-dev/resident/protocol"
)

// HeaderConnData names the header of a data frame (§4.3 of the page): its
// body is not JSON but the next raw bytes of the connection stream it
// names, as a conn/data of those bytes would be.
const HeaderConnData = "Conn-Data"

// Stream is a jsonrpc2.ObjectStream of Content-Length frames with a size
// cap on both directions (the library's own codec has none, and can
// desynchronise on a bad header), and the data frames of connection
// streams beside them: those never reach jsonrpc2, they go to OnData on
// the read loop, in their place among the messages.
type Stream struct {
	r      *bufio.Reader
	closer io.Closer
	max    int
	// OnData takes a data frame's bytes (its own buffer); set it before
	// the first read. Without it a data frame is a framing error.
	OnData func(connID string, data []byte)

	mu   sync.Mutex
	w    io.Writer
	buf  []byte
	head []byte
}

// NewStream frames messages over r and w; closer closes both ends.
func NewStream(r io.Reader, w io.Writer, closer io.Closer, maxFrame int) *Stream {
	if maxFrame <= 0 {
		maxFrame = protocol.DefaultMaxFrameBytes
	}
	return &Stream{r: bufio.NewReaderSize(r, 64<<10), w: w, closer: closer, max: maxFrame}
}

func (s *Stream) ReadObject(v any) error {
	for {
		n, connID, err := s.readHeader()
		if err != nil {
			return err
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(s.r, body); err != nil {
			return fmt.Errorf("%w: body ended after fewer than %d bytes", protocol.ErrFrame, n)
		}
		if connID == "" {
			return json.Unmarshal(body, v)
		}
		if s.OnData == nil {
			return fmt.Errorf("%w: a %s frame, and no connection streams here", protocol.ErrFrame, HeaderConnData)
		}
		s.OnData(connID, body)
	}
}

func frameErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{protocol.ErrFrame}, args...)...)
}

// readHeader reads one header block: the body's length and, for a data
// frame, its connection's id.
func (s *Stream) readHeader() (int, string, error) {
	length, connID := -1, ""
	for lines := 0; ; lines++ {
		if lines >= protocol.MaxHeaderLines {
			return 0, "", frameErrorf("more than %d header lines", protocol.MaxHeaderLines)
		}
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && lines == 0 && line == "" {
				return 0, "", io.EOF
			}
			if errors.Is(err, io.EOF) {
				return 0, "", frameErrorf("stream ended inside a header")
			}
			return 0, "", err
		}
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return 0, "", frameErrorf("header line without a colon")
		}
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		switch {
		case strings.EqualFold(name, HeaderConnData):
			if value == "" || connID != "" {
				return 0, "", frameErrorf("an empty or second %s header", HeaderConnData)
			}
			connID = value
		case strings.EqualFold(name, "Content-Length"):
			if length >= 0 {
				return 0, "", frameErrorf("duplicate Content-Length")
			}
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil || n <= 0 {
				return 0, "", frameErrorf("Content-Length %q is not a positive integer", value[:min(len(value), 32)])
			}
			if n > int64(s.max) {
				return 0, "", frameErrorf("Content-Length %d is over the %d byte limit", n, s.max)
			}
			length = int(n)
		}
	}
	if length < 0 {
		return 0, "", frameErrorf("missing Content-Length")
	}
	return length, connID, nil
}

// readLine reads one CRLF- or LF-terminated header line without ever
// holding more than protocol.MaxHeaderLineBytes of it.
func (s *Stream) readLine() (string, error) {
	var line []byte
	for {
		chunk, err := s.r.ReadSlice('\n')
		if len(line)+len(chunk) > protocol.MaxHeaderLineBytes+2 {
			return "", frameErrorf("header line over %d bytes", protocol.MaxHeaderLineBytes)
		}
		line = append(line, chunk...)
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return string(line), err
	}
	return string(bytes.TrimRight(line, "\r\n")), nil
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

// WriteData sends data (1 byte or more, at most the frame limit) as a data
// frame of connection connID.
func (s *Stream) WriteData(connID string, data []byte) error {
	if len(data) == 0 || len(data) > s.max {
		return protocol.Errorf(protocol.KindInternal, "a data frame of %d bytes", len(data))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := append(s.head[:0], "Content-Length: "...)
	h = strconv.AppendInt(h, int64(len(data)), 10)
	h = append(h, "\r\n"+HeaderConnData+": "...)
	h = append(h, connID...)
	h = append(h, "\r\n\r\n"...)
	s.head = h
	if _, err := s.w.Write(h); err != nil {
		return err
	}
	_, err := s.w.Write(data)
	return err
}

func (s *Stream) Close() error { return s.closer.Close() }
