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
	length := -1
	for lines := 0; ; lines++ {
		if lines >= MaxHeaderLines {
			return nil, frameErrorf("more than %d header lines", MaxHeaderLines)
		}
		line, err := fr.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && lines == 0 && line == "" {
				return nil, io.EOF
			}
			if errors.Is(err, io.EOF) {
				return nil, frameErrorf("stream ended inside a header")
			}
			return nil, err
		}
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, frameErrorf("header line without a colon")
		}
		if !strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			continue
		}
		if length >= 0 {
			return nil, frameErrorf("duplicate Content-Length")
		}
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		if err != nil || n <= 0 {
			return nil, frameErrorf("Content-Length %q is not a positive integer", truncate(value, 32))
		}
		if n > int64(fr.maxFrame) {
			return nil, frameErrorf("Content-Length %d is over the %d byte limit", n, fr.maxFrame)
		}
		length = int(n)
	}
	if length < 0 {
		return nil, frameErrorf("missing Content-Length")
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(fr.r, body); err != nil {
		return nil, frameErrorf("body ended after fewer than %d bytes", length)
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
