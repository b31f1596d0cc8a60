package docker

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The Engine API multiplexes an exec's output without a TTY as frames: an
// 8-byte header (stream type, three bytes the engine leaves zero, payload
// length as big-endian uint32), then the payload. The engine writes header
// and payload with one write, so once a header has arrived its payload is
// in flight, never waiting on the process.
const (
	frameHeaderLen = 8

	engineStdin     = 0 // written to stdout, as the SDK's stdcopy does
	engineStdout    = 1
	engineStderr    = 2
	engineSystemErr = 3 // an error of the engine's own: the stream ends there

	// systemErrMessageMax bounds how much of an engine error is kept.
	systemErrMessageMax = 512
	// holdChunk is how much held stderr grows by at a time: a frame's
	// announced length is never allocated up front.
	holdChunk = 32 << 10
)

// errStreamCorrupt: the stream held something that is no frame of an exec's
// output. Nothing after it can be trusted, so Wait ends the exec at once
// (wait.go) rather than wait for a process whose output is lost.
var errStreamCorrupt = errors.New("exec stream corrupted")

// The demuxer's two outputs.
const (
	outStdout = 0
	outStderr = 1
)

// demuxer splits the engine's multiplexed exec stream for two readers
// without a goroutine or a buffer of its own: whichever reader finds the
// source free reads the next header, and each payload is read by its own
// reader straight from the hijacked connection's bufio.Reader into the
// caller's buffer (one copy at most, none once bufio is empty). A reader
// that meets the other stream's frame hands it over and waits for it to be
// taken: the engine stream is read only as fast as the slower reader reads,
// as with io.Pipe. A reader that stops reading stalls the other only when a
// frame for it comes; while it stays away the other reads headers itself,
// so nothing waits on a reader that is not needed.
//
// Bytes taken from the source before their reader came (stderr that
// overtook the keeper's status line; child stdout in the status line's
// frame) are held and returned first.
//
// Each output has at most one reading goroutine at a time (the resident's
// pumps); the readers see io.EOF, never an error, whether the stream ended
// cleanly or not: Err says why, Wait decides what it means.
type demuxer struct {
	src *bufio.Reader
	// activity is the drain's view of the output: -1 while a reader is
	// behind (it took data and has not come back, or a frame waits for a
	// reader that is not reading), else the time it was last seen waiting
	// for the engine. See noteActivity.
	activity *atomic.Int64
	stdout   demuxReader
	stderr   demuxReader
	done     chan struct{} // closed when the stream ended or was closed

	mu      sync.Mutex
	turn    sync.Cond            // broadcast when the source is free, a frame changes hands, or the stream ends
	reading bool                 // a reader uses src outside mu; nobody else touches src
	header  [frameHeaderLen]byte // guarded by reading
	owner   int                  // whose payload src holds next
	left    int                  // payload bytes of the current frame still in src
	held    [2][]byte            // taken from src before their reader came
	inRead  [2]int               // readers inside Read
	behind  [2]bool              // Read returned data and its reader has not come back
	ended   bool                 // no more reads from src: held bytes, then EOF
	err     error                // why the stream ended, if not at a frame boundary or by close
}

func newDemuxer(src *bufio.Reader, activity *atomic.Int64) *demuxer {
	d := &demuxer{src: src, activity: activity, done: make(chan struct{})}
	d.turn.L = &d.mu
	d.stdout = demuxReader{d, outStdout}
	d.stderr = demuxReader{d, outStderr}
	return d
}

// demuxReader is one output of a demuxer.
type demuxReader struct {
	d   *demuxer
	out int
}

func (r *demuxReader) Read(p []byte) (int, error) { return r.d.read(r.out, p) }

// Err says why the stream ended: nil for a clean end between frames or a
// close, else a broken connection, a cut frame or an engine error.
func (d *demuxer) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// close ends the stream for the readers: a reader waiting for its turn
// gets EOF now; one inside a source read gets it when the caller closes the
// connection under it. Bytes already held are still returned.
func (d *demuxer) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.end(nil)
}

func (d *demuxer) read(out int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.inRead[out]++
	d.behind[out] = false
	d.noteActivity()
	n, err := d.readLocked(out, p)
	d.inRead[out]--
	d.behind[out] = n > 0
	d.noteActivity()
	return n, err
}

func (d *demuxer) readLocked(out int, p []byte) (int, error) {
	for {
		switch {
		case len(d.held[out]) > 0:
			n := copy(p, d.held[out])
			d.held[out] = d.held[out][n:]
			if len(d.held[out]) == 0 {
				d.held[out] = nil // let the held bytes go
			}
			return n, nil
		case d.ended:
			return 0, io.EOF
		case d.reading, d.left > 0 && d.owner != out:
			d.turn.Wait()
		case d.left > 0:
			n := d.fill(p[:min(len(p), d.left)])
			if n > 0 {
				return n + d.coalesce(out, p[n:]), nil
			}
		default:
			d.nextFrame()
		}
	}
}

// fill reads len(dst) bytes of the current frame's payload, all of them
// unless the stream breaks. Called with mu held, !reading, d.left >=
// len(dst); it releases mu around the read.
func (d *demuxer) fill(dst []byte) int {
	d.reading = true
	d.mu.Unlock()
	n, err := io.ReadFull(d.src, dst)
	d.mu.Lock()
	d.reading = false
	d.left -= n
	if err != nil {
		d.end(fmt.Errorf("exec stream: frame cut short, %d of its bytes missing: %w", d.left, err))
	}
	d.turn.Broadcast()
	return n
}

// coalesce adds to a read that ended a frame whatever more of out's output
// is already buffered: frames that came in one burst reach the resident as
// one chunk (one scrub, one frame to the host), never waiting for more. It
// stops at the other stream's frame and at anything that is not output.
func (d *demuxer) coalesce(out int, p []byte) int {
	n := 0
	for n < len(p) && d.left == 0 && !d.ended && d.src.Buffered() >= frameHeaderLen {
		h, _ := d.src.Peek(frameHeaderLen)
		if o, ok := outputOf(h[0]); !ok || o != out {
			break
		}
		_, _ = d.src.Discard(frameHeaderLen)
		d.owner, d.left = out, int(binary.BigEndian.Uint32(h[4:]))
		k := min(len(p)-n, d.left, d.src.Buffered())
		k, _ = d.src.Read(p[n : n+k]) // buffered: no read from the connection
		d.left -= k
		n += k
	}
	return n
}

// nextFrame reads a header and makes its payload the current frame, or
// ends the stream. Called with mu held, !reading, d.left == 0.
func (d *demuxer) nextFrame() {
	d.reading = true
	d.mu.Unlock()
	_, err := io.ReadFull(d.src, d.header[:])
	var msg []byte
	if err == nil && d.header[0] == engineSystemErr {
		msg = make([]byte, min(binary.BigEndian.Uint32(d.header[4:]), systemErrMessageMax))
		n, _ := io.ReadFull(d.src, msg)
		msg = msg[:n]
	}
	d.mu.Lock()
	d.reading = false
	defer d.turn.Broadcast()
	switch {
	case errors.Is(err, io.EOF):
		d.end(nil) // the engine closed the stream between frames: a clean end
		return
	case err != nil:
		d.end(fmt.Errorf("exec stream: frame header cut short: %w", err))
		return
	case d.header[0] == engineSystemErr:
		d.end(fmt.Errorf("exec stream: the engine reported: %s", bytes.ToValidUTF8(msg, []byte("?"))))
		return
	}
	out, ok := outputOf(d.header[0])
	if !ok {
		d.end(fmt.Errorf("%w: unknown stream type %d", errStreamCorrupt, d.header[0]))
		return
	}
	d.owner, d.left = out, int(binary.BigEndian.Uint32(d.header[4:]))
	d.noteActivity()
}

func outputOf(streamType byte) (int, bool) {
	switch streamType {
	case engineStdin, engineStdout:
		return outStdout, true
	case engineStderr:
		return outStderr, true
	}
	return 0, false
}

// end stops reading from the source; the first reason wins. mu is held.
func (d *demuxer) end(err error) {
	if d.ended {
		return
	}
	d.ended, d.err = true, err
	close(d.done)
	d.turn.Broadcast()
}

// noteActivity tells the drain whether the output is moving. The engine
// stream is read only while a reader reads, so bytes may be waiting in the
// connection whenever a reader has taken data and not come back: that
// counts as behind (-1), like a frame or held bytes waiting for a reader
// that is not reading. Otherwise every reader that wants data is waiting
// for the engine, and the time is stamped: once it is drainIdle old, the
// engine has been silent that long. mu is held.
func (d *demuxer) noteActivity() {
	if d.activity == nil {
		return
	}
	behind := d.behind[outStdout] || d.behind[outStderr]
	for out := range d.held {
		waiting := len(d.held[out]) > 0 || (d.left > 0 && d.owner == out)
		behind = behind || (waiting && d.inRead[out] == 0)
	}
	if behind {
		d.activity.Store(-1)
	} else {
		d.activity.Store(time.Now().UnixNano())
	}
}

// statusLine reads the keeper's status line, before any reader runs: stdout
// up to and including the first newline, or the first limit bytes without
// one, or what came before the stream ended. Stderr that arrives first is
// held for the stderr reader (blocking on it would stall the status line
// behind it: nobody reads stderr yet); stdout after the line in the same
// frame is held for the stdout reader, and the rest of that frame stays in
// the source. The result is the caller's: nothing else refers to it.
func (d *demuxer) statusLine(limit int) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	var line []byte
	for !d.ended {
		switch {
		case d.reading:
			d.turn.Wait()
		case d.left == 0:
			d.nextFrame()
		case d.owner == outStderr:
			held := d.held[outStderr]
			k := min(d.left, holdChunk)
			held = slices.Grow(held, k)
			n := d.fill(held[len(held) : len(held)+k])
			d.held[outStderr] = held[:len(held)+n]
			d.noteActivity()
		default:
			start := len(line)
			k := min(d.left, limit-start)
			line = slices.Grow(line, k)
			line = line[:start+d.fill(line[start:start+k])]
			if i := bytes.IndexByte(line[start:], '\n'); i >= 0 {
				end := start + i + 1
				if end < len(line) {
					d.held[outStdout] = bytes.Clone(line[end:])
				}
				return line[:end:end]
			}
			if len(line) >= limit {
				return line
			}
		}
	}
	return line
}
