package docker

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// hijacked is an attach response reading stream (shaped by wrap) and
// writing to a sink nobody reads.
func hijacked(stream []byte, wrap func(io.Reader) io.Reader) client.HijackedResponse {
	c, peer := net.Pipe()
	go func() { _, _ = io.Copy(io.Discard, peer) }()
	return client.HijackedResponse{Conn: c, Reader: bufio.NewReaderSize(wrap(bytes.NewReader(stream)), 16)}
}

// stderrLog collects what the attach stream logs of the keeper's stderr.
type stderrLog struct {
	mu     sync.Mutex
	writes []string
}

func (l *stderrLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes = append(l.writes, string(b))
	return len(b), nil
}

func readAllSized(r io.Reader, size int) ([]byte, error) {
	var out []byte
	buf := make([]byte, size)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return out, err
		}
	}
}

// Stdout frames reach the reader whole and in order across every source
// shape and read size, stderr frames go to the log (each frame one write),
// and a clean end between frames is io.EOF.
func TestAttachStreamDemux(t *testing.T) {
	stream := engineStream(
		engineFrame(engineStdout, "RKc1 first"),
		engineFrame(engineStderr, "keeper: a complaint"),
		engineFrame(engineStdout, ""),
		engineFrame(engineStdin, " second"),
		engineFrame(engineStdout, strings.Repeat("x", 5000)),
		engineFrame(engineStderr, "again"),
	)
	want := "RKc1 first second" + strings.Repeat("x", 5000)
	for _, shape := range sourceShapes {
		for _, size := range []int{1, 7, 4096, 64 << 10} {
			log := &stderrLog{}
			a := newAttachStream(hijacked(stream, shape.wrap), log)
			got, err := readAllSized(a, size)
			if err != io.EOF {
				t.Errorf("%s/%d: ended with %v; want io.EOF", shape.name, size, err)
			}
			if string(got) != want {
				t.Errorf("%s/%d: stdout %d bytes, want %d", shape.name, size, len(got), len(want))
			}
			if strings.Join(log.writes, "|") != "keeper: a complaint|again" {
				t.Errorf("%s/%d: logged %q", shape.name, size, log.writes)
			}
			_ = a.Close()
		}
	}
}

// Frames already buffered come back from one Read (one frame-reader fill
// per burst), and a Read never waits for more once it has bytes.
func TestAttachStreamCoalescesBufferedFrames(t *testing.T) {
	stream := engineStream(engineFrame(engineStdout, "one "), engineFrame(engineStdout, "two "), engineFrame(engineStderr, "log"), engineFrame(engineStdout, "three"))
	c, peer := net.Pipe()
	defer peer.Close()
	a := newAttachStream(client.HijackedResponse{Conn: c, Reader: bufio.NewReader(io.MultiReader(bytes.NewReader(stream), blockingReader{}))}, &stderrLog{})
	buf := make([]byte, 1024)
	n, err := a.Read(buf)
	if err != nil || string(buf[:n]) != "one two three" {
		t.Fatalf("first read %q, %v; want the whole burst", buf[:n], err)
	}
	_ = a.Close()
}

// blockingReader never returns: a connection with nothing more yet.
type blockingReader struct{}

func (blockingReader) Read([]byte) (int, error) { select {} }

// Each way the stream can end badly is an error of its own, after the
// stdout bytes that came before it.
func TestAttachStreamEnds(t *testing.T) {
	long := strings.Repeat("e", 3*attachStderrMax)
	cases := []struct {
		name    string
		stream  []byte
		wantOut string
		wantErr func(error) bool
		logged  string
	}{
		{"engine error", engineStream(engineFrame(engineStdout, "ok"), engineFrame(engineSystemErr, "no such container"), engineFrame(engineStdout, "never")), "ok",
			func(err error) bool {
				return err != nil && strings.Contains(err.Error(), "the engine reported: no such container")
			}, ""},
		{"unknown stream type", engineStream(engineFrame(engineStdout, "ok"), engineFrame(9, "?")), "ok",
			func(err error) bool { return errors.Is(err, errStreamCorrupt) }, ""},
		{"payload cut", engineFrame(engineStdout, "cut short")[:frameHeaderLen+3], "cut",
			func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }, ""},
		{"header cut", append(engineFrame(engineStdout, "ok"), 1, 0, 0), "ok",
			func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }, ""},
		{"stderr cut", append(engineFrame(engineStdout, "ok"), engineFrame(engineStderr, "lost")[:frameHeaderLen+2]...), "ok",
			func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }, "lo"},
		{"long stderr is bounded", engineStream(engineFrame(engineStderr, long), engineFrame(engineStdout, "after")), "after",
			func(err error) bool { return err == io.EOF }, long[:attachStderrMax]},
		{"empty", nil, "", func(err error) bool { return err == io.EOF }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			log := &stderrLog{}
			a := newAttachStream(hijacked(tc.stream, iotest.HalfReader), log)
			defer a.Close()
			got, err := readAllSized(a, 2)
			if string(got) != tc.wantOut || !tc.wantErr(err) {
				t.Errorf("read %q, ended with %v", got, err)
			}
			if strings.Join(log.writes, "") != tc.logged {
				t.Errorf("logged %q; want %q", log.writes, tc.logged)
			}
			// The end stays the end.
			if n, again := a.Read(make([]byte, 8)); n != 0 || again == nil {
				t.Errorf("a read after the end: %d, %v", n, again)
			}
		})
	}
}

// Close ends a Read that waits on the connection.
func TestAttachStreamCloseEndsRead(t *testing.T) {
	c, peer := net.Pipe()
	defer peer.Close()
	a := newAttachStream(client.HijackedResponse{Conn: c, Reader: bufio.NewReader(c)}, &stderrLog{})
	done := make(chan error, 1)
	go func() {
		_, err := a.Read(make([]byte, 64))
		done <- err
	}()
	_ = a.Close()
	if err := <-done; err == nil {
		t.Fatal("the read went on after Close")
	}
	_ = a.Close() // twice is fine
}

// FuzzAttachStream holds the in-place demultiplexer to the reference on
// any stream, read in odd sizes over a source that splits reads.
func FuzzAttachStream(f *testing.F) {
	f.Add(engineStream(engineFrame(engineStdout, "out"), engineFrame(engineStderr, "err"), engineFrame(engineStdin, "in")), uint8(7), false)
	f.Add(engineStream(engineFrame(engineSystemErr, "boom"), engineFrame(engineStdout, "never")), uint8(1), true)
	f.Add(engineFrame(engineStdout, "cut")[:frameHeaderLen+1], uint8(3), false)
	f.Fuzz(func(t *testing.T, stream []byte, readSize uint8, half bool) {
		wrap := func(r io.Reader) io.Reader { return r }
		if half {
			wrap = iotest.HalfReader
		}
		log := &stderrLog{}
		a := newAttachStream(hijacked(stream, wrap), log)
		defer a.Close()
		got, err := readAllSized(a, int(readSize)+1)
		if err == nil {
			t.Fatal("ended without an error")
		}
		wantOut, wantErr := referenceDemux(stream)
		if !bytes.Equal(got, wantOut) {
			t.Fatalf("stdout %q; want %q", got, wantOut)
		}
		var logged []byte
		for _, w := range log.writes {
			logged = append(logged, w...)
		}
		if len(logged) > len(wantErr) || !bytes.Equal(logged, wantErr[:len(logged)]) {
			t.Fatalf("logged %q; not a prefix of stderr %q", logged, wantErr)
		}
	})
}

// pipedAttach is the transport as it was before the in-place demuxer:
// stdcopy.StdCopy into an io.Pipe, on a goroutine. Kept as the
// benchmark's reference.
func pipedAttach(src io.Reader) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, io.Discard, src)
		if err == nil {
			err = io.EOF
		}
		pw.CloseWithError(err)
	}()
	return pr
}

// BenchmarkAttachStreamDemux is the channel's read side over a unix
// socket: the keeper's 32 KiB frames, carried in engine frames of 32 KiB
// as the engine copies them, read by the channel's frame reader through
// the in-place demultiplexer (inplace) and through stdcopy into an
// io.Pipe (stdcopy_pipe, the transport before it), interleaved.
func BenchmarkAttachStreamDemux(b *testing.B) {
	for _, size := range []int{8 << 10, 32 << 10} {
		b.Run(strconv.Itoa(size>>10)+"KiB", func(b *testing.B) { benchAttachDemux(b, size) })
	}
}

func benchAttachDemux(b *testing.B, engineCopy int) {
	const frames = 64
	var chanStream []byte
	payload := bytes.Repeat([]byte("y"), keeperproto.MaxPayload)
	for range frames {
		chanStream, _ = keeperproto.AppendFrame(chanStream, keeperproto.Frame{Type: keeperproto.ChanStdout, Stream: 1, Gen: 1, Payload: payload})
	}
	var stream []byte
	for rest := chanStream; len(rest) > 0; {
		k := min(len(rest), engineCopy)
		stream = append(stream, engineFrame(engineStdout, string(rest[:k]))...)
		rest = rest[k:]
	}
	perOp := len(chanStream)
	readFrames := func(b *testing.B, r io.Reader) {
		fr := keeperproto.NewFrameReader(r)
		n := 0
		for {
			f, err := fr.Next()
			if err != nil {
				break
			}
			keeperproto.ReleasePayload(f.Payload)
			n++
		}
		if n != frames {
			b.Fatalf("read %d frames, want %d", n, frames)
		}
	}
	paths := []struct {
		name string
		read func(b *testing.B, src *bufio.Reader, conn net.Conn)
	}{
		{"inplace", func(b *testing.B, src *bufio.Reader, conn net.Conn) {
			readFrames(b, newAttachStream(client.HijackedResponse{Conn: conn, Reader: src}, io.Discard))
		}},
		{"stdcopy_pipe", func(b *testing.B, src *bufio.Reader, _ net.Conn) { readFrames(b, pipedAttach(src)) }},
	}
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(int64(perOp))
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				src, closer := engineSocket(b, stream, engineCopy+frameHeaderLen)
				p.read(b, src, closer.(net.Conn))
				closer.Close()
			}
			reportCPU(b, cpu, perOp)
		})
	}
}
