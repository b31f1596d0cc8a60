package keeperproto

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// The channel's frames (keeper serve, package channel). Every frame is a
// fixed header, then its payload:
//
//	magic  [4]  "RKc1"
//	type   [1]  a Chan* constant
//	pad    [3]  zero
//	stream [4]  big-endian: the exec or operation, 0 for the channel itself
//	gen    [8]  big-endian: the lease generation of the holder it is from or for
//	length [4]  big-endian: payload bytes, at most MaxPayload
//	crc    [4]  big-endian CRC32 (IEEE) of the first 24 header bytes and the payload
//
// Docker's attach stream merges the stdin of every attacher and may
// interleave their writes mid-frame, so a reader never trusts a frame
// that fails its CRC: it skips one byte and looks for the magic again
// (FrameReader). The generation fences holders: the keeper drops every
// frame of an older one (see ChanHello).
const (
	HeaderSize = 28
	MaxPayload = 32 << 10
)

var magic = [4]byte{'R', 'K', 'c', '1'}

// Frame types. c→k: the resident's side to the keeper; k→c: back.
const (
	ChanHello     byte = 'H' // c→k Hello: take the channel over (any generation)
	ChanWelcome   byte = 'W' // k→c Welcome: the new generation, what the keeper supports
	ChanFenced    byte = 'F' // k→c Fenced: a frame of this (older) generation was refused
	ChanExec      byte = 'X' // c→k Exec on a new stream
	ChanStarted   byte = 'S' // k→c Started: the exec runs
	ChanFailure   byte = 'E' // k→c Failure: the stream's request failed (start error, file error)
	ChanStdout    byte = 'o' // k→c output bytes (an exec's stdout, a read file's bytes)
	ChanStderr    byte = 'e' // k→c an exec's stderr bytes
	ChanStdin     byte = 'i' // c→k input bytes (an exec's stdin, a written file's bytes)
	ChanStdinEOF  byte = 'z' // c→k no more input
	ChanCredit    byte = 'c' // both: 4-byte big-endian count of bytes the sender may send more
	ChanSignal    byte = 'g' // c→k payload: a signal name ("SIGTERM", "TERM", "15")
	ChanResize    byte = 'r' // c→k payload: rows, cols as big-endian uint16
	ChanKill      byte = 'k' // c→k kill the exec's tree
	ChanExit      byte = 'x' // k→c Exit: the exec ended; always after its last output
	ChanAttach    byte = 'A' // c→k Attach to a detached exec on a new stream
	ChanAttached  byte = 'a' // k→c Attached: where the replay starts
	ChanListExecs byte = 'L' // c→k list the detached execs
	ChanWriteFile byte = 'P' // c→k WriteFile, then Stdin frames, then StdinEOF
	ChanReadFile  byte = 'C' // c→k ReadFile
	ChanListDir   byte = 'D' // c→k ListDir
	ChanResult    byte = 'R' // k→c Result: the stream's request succeeded
	ChanEnd       byte = 'n' // k→c a read file's bytes are all sent
	ChanRelease   byte = 'q' // c→k the client is done with the stream (detach from it, or abandon a read)
	ChanPing      byte = 'p' // c→k stream 0: the holder is alive (see Hello.LeaseMS)
	ChanOffset    byte = 'O' // k→c 8-byte big-endian offset of the next output of an attached exec (after a gap the ring dropped)
	ChanKillExec  byte = 'K' // c→k KillExec: kill an exec's tree by id, from any stream
)

// Frame is one decoded frame. Payload is the frame's own copy.
type Frame struct {
	Type    byte
	Stream  uint32
	Gen     uint64
	Payload []byte
}

// AppendFrame appends the encoding of f to buf.
func AppendFrame(buf []byte, f Frame) ([]byte, error) {
	if len(f.Payload) > MaxPayload {
		return buf, fmt.Errorf("keeperproto: frame payload %d > %d", len(f.Payload), MaxPayload)
	}
	start := len(buf)
	buf = append(buf, magic[:]...)
	buf = append(buf, f.Type, 0, 0, 0)
	buf = binary.BigEndian.AppendUint32(buf, f.Stream)
	buf = binary.BigEndian.AppendUint64(buf, f.Gen)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(f.Payload)))
	crc := crc32.Update(crc32.ChecksumIEEE(buf[start:]), crc32.IEEETable, f.Payload)
	buf = binary.BigEndian.AppendUint32(buf, crc)
	return append(buf, f.Payload...), nil
}

// FrameReader reads frames, resynchronising on the magic after garbage or
// a frame that fails its CRC. It is not safe for concurrent use.
type FrameReader struct {
	r *bufio.Reader
	// Skipped counts the bytes thrown away looking for a good frame.
	Skipped int64
}

// NewFrameReader reads frames from r.
func NewFrameReader(r io.Reader) *FrameReader {
	return &FrameReader{r: bufio.NewReaderSize(r, 2*(HeaderSize+MaxPayload))}
}

// ErrTruncated is a stream that ended inside a frame.
var ErrTruncated = errors.New("keeperproto: stream ended inside a frame")

// Next returns the next good frame. io.EOF is a stream that ended between
// frames (or in garbage); ErrTruncated one that ended inside a frame.
func (fr *FrameReader) Next() (Frame, error) {
	for {
		hdr, err := fr.r.Peek(HeaderSize)
		if len(hdr) < 4 || [4]byte(hdr[:4]) != magic {
			if skipErr := fr.skipToMagic(); skipErr != nil {
				return Frame{}, skipErr
			}
			continue
		}
		if err != nil {
			return Frame{}, truncated(err)
		}
		n := int(binary.BigEndian.Uint32(hdr[20:24]))
		if n > MaxPayload || hdr[5]|hdr[6]|hdr[7] != 0 {
			fr.skip(1)
			continue
		}
		whole, err := fr.r.Peek(HeaderSize + n)
		if err != nil {
			return Frame{}, truncated(err)
		}
		want := binary.BigEndian.Uint32(whole[24:28])
		got := crc32.Update(crc32.ChecksumIEEE(whole[:24]), crc32.IEEETable, whole[HeaderSize:])
		if got != want {
			fr.skip(1)
			continue
		}
		f := Frame{
			Type:    whole[4],
			Stream:  binary.BigEndian.Uint32(whole[8:12]),
			Gen:     binary.BigEndian.Uint64(whole[12:20]),
			Payload: append([]byte(nil), whole[HeaderSize:]...),
		}
		_, _ = fr.r.Discard(HeaderSize + n)
		return f, nil
	}
}

// skipToMagic drops bytes up to the next possible start of the magic.
func (fr *FrameReader) skipToMagic() error {
	for {
		b, err := fr.r.Peek(1)
		if err != nil {
			return err // EOF between frames
		}
		if b[0] == magic[0] {
			head, err := fr.r.Peek(4)
			if err == nil && [4]byte(head) == magic {
				return nil
			}
			if err != nil && len(head) == len(magic[:len(head)]) && string(head) == string(magic[:len(head)]) {
				return truncated(err)
			}
		}
		fr.skip(1)
	}
}

func (fr *FrameReader) skip(n int) {
	d, _ := fr.r.Discard(n)
	fr.Skipped += int64(d)
}

func truncated(err error) error {
	if errors.Is(err, io.EOF) {
		return ErrTruncated
	}
	return err
}
