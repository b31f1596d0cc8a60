package docker

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"golang.org/x/sys/unix"
)

// engineSocket is a connected unix socket pair with the engine's side
// writing stream, in writes of at most write bytes, as the engine writes
// one frame at a time.
func engineSocket(b *testing.B, stream []byte, write int) (*bufio.Reader, io.Closer) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		conns[i], err = net.FileConn(f)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	go func() {
		defer conns[0].Close()
		for rest := stream; len(rest) > 0; {
			n, err := conns[0].Write(rest[:min(write, len(rest))])
			if err != nil {
				return
			}
			rest = rest[n:]
		}
	}()
	return bufio.NewReader(conns[1]), conns[1]
}

// BenchmarkExecOutputPath is the provider's part of exec output over a
// unix socket: engine frames of 20 KB (what the streaming figure sees) split for a stdout
// reader with the pump's 64 KiB buffer and an idle stderr reader. The
// stdcopy_pipe case is the path this package had before the demuxer
// (stdcopy.StdCopy into io.Pipes), kept here as the reference.
func BenchmarkExecOutputPath(b *testing.B) {
	const payload, frames = 20 << 10, 64
	var stream []byte
	for range frames {
		stream = append(stream, engineFrame(engineStdout, string(bytes.Repeat([]byte("x"), payload)))...)
	}
	const perOp = frames * payload
	newSource := func() (*bufio.Reader, io.Closer) { return engineSocket(b, stream, payload+frameHeaderLen) }
	readStdout := func(b *testing.B, stdout, stderr io.Reader) {
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = io.Copy(io.Discard, stderr) })
		buf := make([]byte, 64<<10)
		total := 0
		for {
			n, err := stdout.Read(buf)
			total += n
			if err != nil {
				break
			}
		}
		wg.Wait()
		if total != perOp {
			b.Fatalf("read %d bytes, want %d", total, perOp)
		}
	}
	path := func(name string, readOne func(b *testing.B, src *bufio.Reader)) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(perOp)
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				src, conn := newSource()
				readOne(b, src)
				conn.Close()
			}
			reportCPU(b, cpu, perOp)
		})
	}
	path("demuxer", func(b *testing.B, src *bufio.Reader) {
		d := newDemuxer(src, nil)
		readStdout(b, &d.stdout, &d.stderr)
	})
	path("demuxer_stdout_only", func(b *testing.B, src *bufio.Reader) {
		d := newDemuxer(src, nil)
		readStdout(b, &d.stdout, bytes.NewReader(nil))
	})
	path("stdcopy_pipe", func(b *testing.B, src *bufio.Reader) {
		outR, outW := io.Pipe()
		errR, errW := io.Pipe()
		go func() {
			_, _ = stdcopy.StdCopy(outW, errW, src)
			outW.Close()
			errW.Close()
		}()
		readStdout(b, outR, errR)
	})
}

// cpuTime is the process's CPU time so far: both cores' worth, which
// wall time per op hides.
func cpuTime() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, since time.Duration, perOp int) {
	b.ReportMetric((cpuTime()-since).Seconds()/(float64(b.N)*float64(perOp))*1e9, "cpu-s/GB")
}
