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
//	length [4]  big-endian: payload bytes, at most MaxPayload (MaxSealedPayload for ChanSealed, seal.go)
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
	// ChanDial (c→k Dial, FeatureNet) opens a connection stream: Result
	// once connected or Failure, then ChanStdin/ChanStdout bytes both ways
	// within each side's credit, ChanStdinEOF and an empty ChanEnd as the
	// half-closes, a ChanEnd with a NetReset, or ChanRelease from the
	// client, as a reset (see Dial).
	ChanDial byte = 'N'
	// ChanShutdown (c→k, FeatureShutdown) ends the sandbox: the keeper, as
	// its init, kills every other process, answers Result once none is
	// left (or Failure, and keeps serving), then exits.
	ChanShutdown byte = 'T'
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
		if n > maxPayloadOf(hdr[4]) || hdr[5]|hdr[6]|hdr[7] != 0 {
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
			Payload: newPayload(whole[HeaderSize:]),
		}
		_, _ = fr.r.Discard(HeaderSize + n)
		return f, nil
	}
}

// maxPayloadOf bounds a frame's payload by its type: a sealed frame
// carries a whole frame and the seal's overhead.
func maxPayloadOf(typ byte) int {
	if typ == ChanSealed {
		return MaxSealedPayload
	}
	return MaxPayload
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

// payloads recycles the buffers of frame payloads: a fast stream
// allocated a payload a frame, and the collections that followed were a
// third of the channel client's CPU. A reader that is done with a payload
// may hand it back (ReleasePayload); one that keeps it loses nothing.
//
// Buffers come in powers of two from 1 KiB to MaxPayload, each payload in
// the smallest that holds it, so a buffer never holds more than twice its
// bytes: the credit that bounds a stream counts bytes, not buffers. Over a
// Docker attach stream most of an exec's frames are smaller than 16 KiB
// (the keeper sends what the command wrote, as it wrote it); pooled only
// from 16 KiB up, their exact allocations were four fifths of the bytes
// allocated in a heap profile of 100 streaming execs (docs/performance.md).
// Each size's list is bounded: 2
// MiB idle for MaxPayload buffers, 256 KiB for each smaller size.
var payloads [payloadClasses]chan []byte

const (
	// minPooled is the smallest payload given a pooled buffer: below it
	// (control frames, short lines) an exact allocation is cheaper than
	// the list.
	minPooled       = 512
	minPayloadClass = 1 << 10
	payloadClasses  = 6 // 1 KiB .. 16 KiB, then MaxSealedPayload
)

func init() {
	for k := range payloads {
		size := classSize(k)
		n := (256 << 10) / size
		if k == payloadClasses-1 {
			n = 64
		}
		payloads[k] = make(chan []byte, n)
	}
}

// classSize is the capacity of class k's buffers: powers of two, except
// the largest, which holds MaxPayload and a sealed frame's overhead too
// (Opener.Open decrypts a sealed payload in place, in its own buffer).
func classSize(k int) int {
	if k == payloadClasses-1 {
		return MaxSealedPayload
	}
	return minPayloadClass << k
}

// payloadClass is the index of the smallest buffer size that holds n
// bytes (minPooled <= n <= MaxSealedPayload).
func payloadClass(n int) int {
	k := 0
	for classSize(k) < n {
		k++
	}
	return k
}

func newPayload(src []byte) []byte {
	if len(src) < minPooled {
		return append([]byte(nil), src...)
	}
	k := payloadClass(len(src))
	var b []byte
	select {
	case b = <-payloads[k]:
	default:
		b = make([]byte, classSize(k))
	}
	return b[:copy(b[:len(src)], src)]
}

// ReleasePayload gives a frame's payload back for a later frame. The
// caller must hold no other reference to it; a payload that did not come
// from a pooled buffer (a small one, or a slice of one not at its start)
// is left alone.
func ReleasePayload(b []byte) {
	c := cap(b)
	if c < minPayloadClass || c > MaxSealedPayload {
		return
	}
	k := payloadClass(c)
	if classSize(k) != c {
		return
	}
	select {
	case payloads[k] <- b[:c]:
	default:
	}
}
