package protocol

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Frame limits. A header block is a few dozen bytes in practice; the limits
// only stop a hostile or broken host from making the reader buffer without end.
const (
	DefaultMaxFrameBytes = 16 << 20
	MaxHeaderLineBytes   = 1024
	MaxHeaderLines       = 32
)

// ErrFrame marks an unrecoverable framing error: the stream position is
// unknown, so the session must end (exit code 2).
var ErrFrame = errors.New("frame")

func frameErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrFrame}, args...)...)
}

// FrameReader reads LSP-style frames. It reads exactly the announced length,
// so a bad body never desynchronises the stream.
type FrameReader struct {
	r        *bufio.Reader
	maxFrame int
}

func NewFrameReader(r io.Reader, maxFrame int) *FrameReader {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrameBytes
	}
	return &FrameReader{r: bufio.NewReaderSize(r, 64<<10), maxFrame: maxFrame}
}

// Read returns the next frame's body. io.EOF means the stream ended cleanly
// between frames; any other error wraps ErrFrame or is an I/O error.
func (fr *FrameReader) Read() ([]byte, error) {
	n, err := fr.ReadHeader()
	if err != nil {
		return nil, err
	}
	return fr.ReadBody(n)
}

// ReadHeader reads the next frame's header block and returns its body
// length, which is between 1 and the frame limit. Nothing of the body is
// read or allocated yet, so a caller can account for the length first (and
// wait until it may hold that much) before calling ReadBody.
func (fr *FrameReader) ReadHeader() (int, error) {
	length := -1
	for lines := 0; ; lines++ {
		if lines >= MaxHeaderLines {
			return 0, frameErrorf("more than %d header lines", MaxHeaderLines)
		}
		line, err := fr.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && lines == 0 && line == "" {
				return 0, io.EOF
			}
			if errors.Is(err, io.EOF) {
				return 0, frameErrorf("stream ended inside a header")
			}
			return 0, err
		}
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return 0, frameErrorf("header line without a colon")
		}
		if !strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			continue
		}
		if length >= 0 {
			return 0, frameErrorf("duplicate Content-Length")
		}
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		if err != nil || n <= 0 {
			return 0, frameErrorf("Content-Length %q is not a positive integer", truncate(value, 32))
		}
		if n > int64(fr.maxFrame) {
			return 0, frameErrorf("Content-Length %d is over the %d byte limit", n, fr.maxFrame)
		}
		length = int(n)
	}
	if length < 0 {
		return 0, frameErrorf("missing Content-Length")
	}
	return length, nil
}

// ReadBody reads exactly the n bytes of body that ReadHeader announced, into
// one buffer of that size (the only copy of the frame the reader makes).
func (fr *FrameReader) ReadBody(n int) ([]byte, error) {
	return fr.ReadBodyInto(nil, n)
}

// ReadBodyInto is ReadBody into buf when it has room for n bytes (a buffer
// the caller recycles), else into a new buffer. The body returned aliases
// buf then.
func (fr *FrameReader) ReadBodyInto(buf []byte, n int) ([]byte, error) {
	body := buf[:0:cap(buf)]
	if cap(body) < n {
		body = make([]byte, n)
	}
	body = body[:n]
	if _, err := io.ReadFull(fr.r, body); err != nil {
		return nil, frameErrorf("body ended after fewer than %d bytes", n)
	}
	return body, nil
}

// readLine reads one CRLF- or LF-terminated header line without ever holding
// more than MaxHeaderLineBytes of it.
func (fr *FrameReader) readLine() (string, error) {
	var line []byte
	for {
		chunk, err := fr.r.ReadSlice('\n')
		if len(line)+len(chunk) > MaxHeaderLineBytes+2 {
			return "", frameErrorf("header line over %d bytes", MaxHeaderLineBytes)
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

// AppendFrame appends body framed with its header to dst.
func AppendFrame(dst, body []byte) []byte {
	return append(AppendFrameHeader(dst, len(body)), body...)
}

// AppendFrameHeader appends the header of a frame whose body is n bytes; the
// caller appends exactly n bytes of body after it.
func AppendFrameHeader(dst []byte, n int) []byte {
	dst = append(dst, "Content-Length: "...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, "\r\n\r\n"...)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
