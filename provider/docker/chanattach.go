package docker

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/moby/moby/client"
	"go.uber.org/zap"
)

// attachStream is the container's attach stream as the channel's
// transport: stdout demultiplexed from the engine's stream framing in
// place, stdin the hijacked connection itself.
//
// The demultiplexer is the channel reader's own call: Read parses the
// engine's 8-byte headers and copies each stdout payload from its read
// buffer into the caller's (the channel's frame reader), with no
// goroutine and no io.Pipe. It replaced stdcopy.StdCopy into an io.Pipe,
// which cost a goroutine hand-off per engine frame and, through the pipe,
// gave the frame reader at most one engine frame per read (see "The
// keeper channel over Docker's attach stream" in docs/performance.md).
// The keeper's stderr frames go to the log inline, bounded.
//
// Read is for one goroutine at a time (the channel's read loop); Close
// may come from any, and ends a Read in progress by closing the
// connection under it.
type attachStream struct {
	att    client.HijackedResponse
	src    *bufio.Reader
	stderr io.Writer
	once   sync.Once

	hdr  [frameHeaderLen]byte
	left int   // stdout payload bytes of the current engine frame still in src
	err  error // the stream's end, returned once what was read is delivered
}

// attachStderrMax bounds how much of one stderr frame of the keeper's is
// kept for the log; the rest is skipped.
const attachStderrMax = 512

// attachReadBuffer is the attach stream's read buffer: the engine copies
// the container's stdout in pieces of about 8 KiB, each its own engine
// frame, and a read of 64 KiB takes as many of them as have arrived in
// one system call (the SDK's reader holds 4 KiB).
const attachReadBuffer = 64 << 10

func newAttachStream(att client.HijackedResponse, stderr io.Writer) *attachStream {
	var under io.Reader = att.Conn
	if att.Reader != nil {
		under = att.Reader // it may hold bytes already read from Conn
	}
	return &attachStream{att: att, src: bufio.NewReaderSize(&burstReader{r: under}, attachReadBuffer), stderr: stderr}
}

// Read returns stdout bytes of the keeper: the current engine frame's
// payload, then as many more whole frames as are already buffered (one
// read here per burst, never waiting for more once it has some). io.EOF
// is the engine closing the stream between frames; a stream cut inside a
// frame is io.ErrUnexpectedEOF; an engine error ends it with the
// engine's message.
func (a *attachStream) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && a.err == nil {
		if a.left == 0 {
			if n > 0 && a.src.Buffered() < frameHeaderLen {
				break // more would mean waiting: deliver what we have
			}
			a.err = a.nextFrame()
			continue
		}
		k := min(len(p)-n, a.left)
		if n > 0 {
			if k = min(k, a.src.Buffered()); k == 0 {
				break
			}
		}
		// The engine writes header and payload together: once a header
		// came, its payload is in flight, so reading it whole waits on
		// nothing but the connection.
		m, err := io.ReadFull(a.src, p[n:n+k])
		n += m
		a.left -= m
		if err != nil {
			a.err = fmt.Errorf("attach stream: frame cut short, %d of its bytes missing: %w", a.left, unexpected(err))
		}
	}
	if n > 0 {
		return n, nil
	}
	if a.err == nil {
		return 0, nil // len(p) == 0
	}
	return 0, a.err
}

// nextFrame reads an engine header: a stdout frame becomes the current
// one; a stderr frame goes to the log whole; anything else ends the
// stream (nil error means a frame was taken).
func (a *attachStream) nextFrame() error {
	if _, err := io.ReadFull(a.src, a.hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return io.EOF // closed between frames
		}
		return fmt.Errorf("attach stream: frame header cut short: %w", unexpected(err))
	}
	size := int(binary.BigEndian.Uint32(a.hdr[4:]))
	switch a.hdr[0] {
	case engineStdin, engineStdout:
		a.left = size
		return nil
	case engineStderr:
		msg, err := a.take(size, attachStderrMax)
		if len(msg) > 0 && a.stderr != nil {
			_, _ = a.stderr.Write(msg)
		}
		return err
	case engineSystemErr:
		msg, err := a.take(size, systemErrMessageMax)
		if err != nil {
			return err
		}
		return fmt.Errorf("attach stream: the engine reported: %s", bytes.ToValidUTF8(msg, []byte("?")))
	}
	return fmt.Errorf("%w: unknown stream type %d", errStreamCorrupt, a.hdr[0])
}

// take reads a payload of size bytes, keeping the first keep of them.
func (a *attachStream) take(size, keep int) ([]byte, error) {
	msg := make([]byte, min(size, keep))
	n, err := io.ReadFull(a.src, msg)
	if err == nil && size > n {
		var d int
		d, err = a.src.Discard(size - n)
		n += d
	}
	if err != nil {
		return msg[:min(n, len(msg))], fmt.Errorf("attach stream: frame cut short, %d of its bytes missing: %w", size-n, unexpected(err))
	}
	return msg, nil
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Write sends b to the keeper's stdin: one write on the connection.
func (a *attachStream) Write(b []byte) (int, error) { return a.att.Conn.Write(b) }

// Close ends the attach (the container's stdin stays open: the keeper
// waits for the next holder); a Read in progress ends with the
// connection's error.
func (a *attachStream) Close() error {
	a.once.Do(a.att.Close)
	return nil
}

// keeperLog writes what the keeper says on its stderr to the log, a line
// at a time and bounded.
type keeperLog struct {
	log     *zap.Logger
	sandbox string
}

func (k *keeperLog) Write(b []byte) (int, error) {
	msg := b
	if len(msg) > 512 {
		msg = msg[:512]
	}
	k.log.Info("sandbox keeper", zap.String("sandbox", k.sandbox), zap.ByteString("stderr", msg))
	return len(b), nil
}
