package docker

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"
)

// engineFrame is one frame of the engine's multiplexed stream.
func engineFrame(streamType byte, payload string) []byte {
	h := make([]byte, frameHeaderLen, frameHeaderLen+len(payload))
	h[0] = streamType
	binary.BigEndian.PutUint32(h[4:], uint32(len(payload)))
	return append(h, payload...)
}

func engineStream(frames ...[]byte) []byte { return bytes.Join(frames, nil) }

// readBoth reads both outputs to EOF concurrently, as the resident does,
// with reads of size bytes.
func readBoth(t *testing.T, d *demuxer, size int) (stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	var wg sync.WaitGroup
	wg.Go(func() { copyWithBuffer(t, &out, &d.stdout, size) })
	wg.Go(func() { copyWithBuffer(t, &errOut, &d.stderr, size) })
	wg.Wait()
	return out.String(), errOut.String()
}

func copyWithBuffer(t *testing.T, w io.Writer, r io.Reader, size int) {
	buf := make([]byte, size)
	for {
		n, err := r.Read(buf)
		w.Write(buf[:n])
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Errorf("a reader saw %v; want only io.EOF", err)
			return
		}
	}
}

// Every source shape: whole, one byte per read (headers split across
// reads), and half reads; with bufio as small as it goes.
var sourceShapes = []struct {
	name string
	wrap func(io.Reader) io.Reader
}{
	{"whole", func(r io.Reader) io.Reader { return r }},
	{"one_byte", iotest.OneByteReader},
	{"half", iotest.HalfReader},
}

func TestDemuxSplitsStreams(t *testing.T) {
	cases := []struct {
		name           string
		stream         []byte
		stdout, stderr string
		errContains    string // "" : a clean end
	}{
		{"empty", nil, "", "", ""},
		{"stdout_then_stderr", engineStream(engineFrame(engineStdout, "out\n"), engineFrame(engineStderr, "err\n")), "out\n", "err\n", ""},
		{"stdin_type_goes_to_stdout", engineStream(engineFrame(engineStdin, "in"), engineFrame(engineStdout, "out")), "inout", "", ""},
		{"zero_length_frames", engineStream(engineFrame(engineStdout, ""), engineFrame(engineStderr, ""), engineFrame(engineStdout, "a"), engineFrame(engineStdout, "")), "a", "", ""},
		{"interleaved_order_kept", engineStream(
			engineFrame(engineStdout, "o1 "), engineFrame(engineStderr, "e1 "), engineFrame(engineStderr, "e2 "),
			engineFrame(engineStdout, "o2 "), engineFrame(engineStdout, "o3 "), engineFrame(engineStderr, "e3 ")),
			"o1 o2 o3 ", "e1 e2 e3 ", ""},
		{"unknown_stream_type", engineStream(engineFrame(engineStdout, "kept"), engineFrame(9, "lost"), engineFrame(engineStdout, "never")), "kept", "", "unknown stream type 9"},
		{"engine_error", engineStream(engineFrame(engineStderr, "kept"), engineFrame(engineSystemErr, "no such exec"), engineFrame(engineStdout, "never")), "", "kept", "the engine reported: no such exec"},
		{"truncated_header", append(engineFrame(engineStdout, "kept"), 1, 0, 0), "kept", "", "frame header cut short"},
		{"truncated_payload", engineFrame(engineStderr, "0123456789")[:frameHeaderLen+4], "", "0123", "frame cut short, 6 of its bytes missing"},
	}
	for _, c := range cases {
		for _, shape := range sourceShapes {
			for _, size := range []int{1, 3, 4096} {
				t.Run(c.name+"/"+shape.name+"/"+strconv.Itoa(size), func(t *testing.T) {
					d := newDemuxer(bufio.NewReaderSize(shape.wrap(bytes.NewReader(c.stream)), 16), nil)
					stdout, stderr := readBoth(t, d, size)
					if stdout != c.stdout || stderr != c.stderr {
						t.Fatalf("stdout %q, stderr %q; want %q, %q", stdout, stderr, c.stdout, c.stderr)
					}
					err := d.Err()
					if c.errContains == "" && err != nil || c.errContains != "" && (err == nil || !strings.Contains(err.Error(), c.errContains)) {
						t.Fatalf("Err() = %v; want %q", err, c.errContains)
					}
					if !closed(d.done) {
						t.Fatal("the stream ended but done is open")
					}
				})
			}
		}
	}
}

// Frames of one stream that arrived in one burst are one read; the other
// stream's frame ends it.
func TestDemuxCoalescesBufferedFrames(t *testing.T) {
	stream := engineStream(engineFrame(engineStdout, "a"), engineFrame(engineStdout, ""), engineFrame(engineStdout, "bc"),
		engineFrame(engineStderr, "x"), engineFrame(engineStdout, "d"))
	d := newDemuxer(bufio.NewReader(bytes.NewReader(stream)), nil)
	buf := make([]byte, 64)
	n, err := d.stdout.Read(buf)
	if err != nil || string(buf[:n]) != "abc" {
		t.Fatalf("first read %q, %v; want the three buffered stdout frames as one", buf[:n], err)
	}
	if n, err := d.stderr.Read(buf); err != nil || string(buf[:n]) != "x" {
		t.Fatalf("stderr read %q, %v", buf[:n], err)
	}
	if n, err := d.stdout.Read(buf); err != nil || string(buf[:n]) != "d" {
		t.Fatalf("second stdout read %q, %v", buf[:n], err)
	}
}

// A frame is read only when its reader reads it; a reader that meets the
// other stream's frame waits for it to be taken, and the engine stream is
// not read past it (the backpressure io.Pipe gave).
func TestDemuxSlowStderrHoldsTheStreamNotStdout(t *testing.T) {
	big := strings.Repeat("E", 1000)
	stream := engineStream(engineFrame(engineStdout, "before\n"), engineFrame(engineStderr, big), engineFrame(engineStdout, "after\n"))
	src := &countingReader{r: bytes.NewReader(stream)}
	d := newDemuxer(bufio.NewReaderSize(src, 16), nil)
	buf := make([]byte, 4096)
	if n, err := d.stdout.Read(buf); err != nil || string(buf[:n]) != "before\n" {
		t.Fatalf("first stdout read %q, %v", buf[:n], err)
	}
	got := make(chan string)
	go func() {
		b, _ := io.ReadAll(&d.stdout)
		got <- string(b)
	}()
	// The stdout reader now waits for the stderr frame to be taken.
	await(t, "the stdout reader waiting on the stderr frame", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.inRead[outStdout] == 1 && d.owner == outStderr && d.left == len(big)
	})
	if read, limit := src.n.Load(), int64(len(engineFrame(engineStdout, "before\n"))+frameHeaderLen+16); read > limit {
		t.Fatalf("the engine stream was read to byte %d behind an untaken stderr frame; want at most %d", read, limit)
	}
	errOut, err := io.ReadAll(&d.stderr)
	if err != nil || string(errOut) != big {
		t.Fatalf("stderr %d bytes, %v", len(errOut), err)
	}
	if out := <-got; out != "after\n" {
		t.Fatalf("stdout after the stderr frame: %q", out)
	}
}

// A reader that stops reading (as a test reading one stderr line does)
// does not stall the other while nothing comes for it.
func TestDemuxAbsentReaderDoesNotStallTheOther(t *testing.T) {
	var frames [][]byte
	frames = append(frames, engineFrame(engineStderr, "one line\n"))
	for range 100 {
		frames = append(frames, engineFrame(engineStdout, "out\n"))
	}
	d := newDemuxer(bufio.NewReaderSize(iotest.HalfReader(bytes.NewReader(engineStream(frames...))), 16), nil)
	line, err := bufio.NewReader(&d.stderr).ReadString('\n')
	if err != nil || line != "one line\n" {
		t.Fatalf("stderr %q, %v", line, err)
	}
	out, err := io.ReadAll(&d.stdout)
	if err != nil || string(out) != strings.Repeat("out\n", 100) {
		t.Fatalf("stdout %d bytes, %v", len(out), err)
	}
}

func TestDemuxStatusLine(t *testing.T) {
	cases := []struct {
		name                   string
		stream                 []byte
		limit                  int
		status, stdout, stderr string
	}{
		{"alone", engineStream(engineFrame(engineStdout, "ok 0\n"), engineFrame(engineStdout, "child")), 64, "ok 0\n", "child", ""},
		{"stderr_overtakes_it", engineStream(engineFrame(engineStderr, "early "), engineFrame(engineStderr, "err"), engineFrame(engineStdout, "ok 0\n"), engineFrame(engineStderr, " late")), 64, "ok 0\n", "", "early err late"},
		{"child_output_in_its_frame", engineStream(engineFrame(engineStdout, "ok 0\nchild "), engineFrame(engineStdout, "more")), 64, "ok 0\n", "child more", ""},
		{"split_over_frames", engineStream(engineFrame(engineStdout, "o"), engineFrame(engineStdout, "k 0"), engineFrame(engineStdout, "\nrest")), 64, "ok 0\n", "rest", ""},
		{"no_newline_within_limit", engineStream(engineFrame(engineStdout, "0123456789")), 4, "0123", "456789", ""},
		{"stream_ends_first", engineStream(engineFrame(engineStderr, "exec failed"), engineFrame(engineStdout, "partial")), 64, "partial", "", "exec failed"},
		{"nothing", nil, 64, "", "", ""},
	}
	for _, c := range cases {
		for _, shape := range sourceShapes {
			t.Run(c.name+"/"+shape.name, func(t *testing.T) {
				d := newDemuxer(bufio.NewReaderSize(shape.wrap(bytes.NewReader(c.stream)), 16), nil)
				status := d.statusLine(c.limit)
				stdout, stderr := readBoth(t, d, 4096)
				if string(status) != c.status || stdout != c.stdout || stderr != c.stderr {
					t.Fatalf("status %q, stdout %q, stderr %q; want %q, %q, %q", status, stdout, stderr, c.status, c.stdout, c.stderr)
				}
			})
		}
	}
}

// close gives a waiting reader EOF at once and a reader inside a source
// read EOF when the connection closes under it; held bytes still come out.
func TestDemuxClose(t *testing.T) {
	engine, conn := net.Pipe()
	defer engine.Close()
	d := newDemuxer(bufio.NewReader(conn), nil)
	go func() {
		_, _ = engine.Write(engineStream(engineFrame(engineStderr, "held"), engineFrame(engineStdout, "status\n")))
	}()
	status := d.statusLine(64)
	if string(status) != "status\n" {
		t.Fatalf("status %q", status)
	}
	results := make(chan string, 2)
	go func() { b, _ := io.ReadAll(&d.stdout); results <- "stdout:" + string(b) }()
	await(t, "the stdout reader inside a source read", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.reading && d.inRead[outStdout] == 1
	})
	d.close()
	conn.Close()
	if got := <-results; got != "stdout:" {
		t.Fatalf("after close: %q", got)
	}
	errOut, err := io.ReadAll(&d.stderr)
	if err != nil || string(errOut) != "held" {
		t.Fatalf("held stderr after close: %q, %v", errOut, err)
	}
	if d.Err() != nil {
		t.Fatalf("Err after close = %v; want nil", d.Err())
	}
}

// The drain reads activity: a time while every reader waits on the
// engine, -1 while a reader is behind.
func TestDemuxActivity(t *testing.T) {
	engine, conn := net.Pipe()
	defer engine.Close()
	defer conn.Close()
	var activity atomic.Int64
	d := newDemuxer(bufio.NewReader(conn), &activity)
	buf := make([]byte, 64)

	go func() { _, _ = engine.Write(engineFrame(engineStdout, "x")) }()
	if n, _ := d.stdout.Read(buf); n != 1 {
		t.Fatalf("read %d bytes", n)
	}
	if got := activity.Load(); got != -1 {
		t.Fatalf("a reader holds data it has not finished with: activity %d; want -1", got)
	}

	before := time.Now().UnixNano()
	go func() { _, _ = d.stdout.Read(buf) }()
	await(t, "activity stamped by the reader waiting on the engine", func() bool { return activity.Load() >= before })

	// A stderr frame nobody reads: behind.
	_, _ = engine.Write(engineFrame(engineStderr, "e"))
	await(t, "activity -1 with a frame waiting for an absent reader", func() bool { return activity.Load() == -1 })
	if n, _ := d.stderr.Read(buf); n != 1 {
		t.Fatalf("stderr read %d bytes", n)
	}
	d.close()
}

// countingReader counts the bytes the demuxer took from the engine.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// await polls cond; no test asserts on timing.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
