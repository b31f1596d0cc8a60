package docker

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"testing"
	"testing/iotest"
)

// referenceDemux is the engine stream format read the plainest way, one
// frame at a time: what each output must receive.
func referenceDemux(stream []byte) (stdout, stderr []byte) {
	for len(stream) >= frameHeaderLen {
		size := int(min(binary.BigEndian.Uint32(stream[4:frameHeaderLen]), uint32(len(stream)-frameHeaderLen)))
		payload := stream[frameHeaderLen : frameHeaderLen+size]
		switch stream[0] {
		case engineStdin, engineStdout:
			stdout = append(stdout, payload...)
		case engineStderr:
			stderr = append(stderr, payload...)
		default:
			return stdout, stderr
		}
		stream = stream[frameHeaderLen+size:]
	}
	return stdout, stderr
}

// FuzzDemux holds the demuxer to the reference on any stream, read by two
// concurrent readers with odd buffer sizes over a source that splits reads,
// with and without the status line read first (limit statusLimit).
func FuzzDemux(f *testing.F) {
	f.Add(engineStream(engineFrame(engineStdout, "ok 0\nout"), engineFrame(engineStderr, "err")), uint8(7), true, false)
	f.Add(engineStream(engineFrame(engineStderr, "early"), engineFrame(engineStdout, "ok 0\n"), engineFrame(engineStdin, "in")), uint8(1), true, true)
	f.Add(engineStream(engineFrame(engineStdout, ""), engineFrame(engineStdout, "a"), engineFrame(7, "x")), uint8(0), false, false)
	f.Add(engineStream(engineFrame(engineSystemErr, "boom"), engineFrame(engineStdout, "never")), uint8(200), false, true)
	f.Add(engineFrame(engineStdout, "cut")[:frameHeaderLen+1], uint8(3), false, false)
	f.Fuzz(fuzzOne)
}

func fuzzOne(t *testing.T, stream []byte, readSize uint8, withStatus, halfReads bool) {
	const statusLimit = 16
	{
		var src = bytes.NewReader(stream)
		d := newDemuxer(bufio.NewReaderSize(src, 16), nil)
		if halfReads {
			d = newDemuxer(bufio.NewReaderSize(iotest.HalfReader(src), 16), nil)
		}
		wantOut, wantErr := referenceDemux(stream)
		var status []byte
		if withStatus {
			status = d.statusLine(statusLimit)
			want := wantOut[:min(len(wantOut), statusLimit)]
			if i := bytes.IndexByte(want, '\n'); i >= 0 {
				want = want[:i+1]
			}
			if !bytes.Equal(status, want) {
				t.Fatalf("status %q; want %q", status, want)
			}
		}
		stdout, stderr := readBoth(t, d, int(readSize)+1)
		if got := append(status, stdout...); !bytes.Equal(got, wantOut) {
			t.Fatalf("stdout %q; want %q", got, wantOut)
		}
		if !bytes.Equal([]byte(stderr), wantErr) {
			t.Fatalf("stderr %q; want %q", stderr, wantErr)
		}
	}
}
