package docker

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"testing"
)

// chunkedBody writes a request net/http reads back whole: the head, each
// Write a chunk (an empty one skipped: it would end the body), the end.
func TestChunkedBodyIsHTTP(t *testing.T) {
	var wire bytes.Buffer
	cw := &chunkedBody{w: &wire, head: []byte("PUT /x?path=%2Ftmp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")}
	var want []byte
	for _, part := range [][]byte{[]byte("tar header"), nil, bytes.Repeat([]byte{0xab}, 300000), []byte("tail")} {
		if n, err := cw.Write(part); n != len(part) || err != nil {
			t.Fatalf("write %d bytes: %d, %v", len(part), n, err)
		}
		want = append(want, part...)
	}
	if err := cw.end(); err != nil {
		t.Fatal(err)
	}
	req, err := http.ReadRequest(bufio.NewReader(&wire))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(req.Body)
	if err != nil || !bytes.Equal(got, want) || req.Method != http.MethodPut || req.URL.Query().Get("path") != "/tmp" {
		t.Fatalf("read back %s %s: %d bytes (want %d), %v", req.Method, req.URL, len(got), len(want), err)
	}
	if wire.Len() != 0 {
		t.Fatalf("%d bytes after the request", wire.Len())
	}
	// A body with nothing in it is the head and the last chunk.
	wire.Reset()
	cw = &chunkedBody{w: &wire, head: []byte("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")}
	if err := cw.end(); err != nil {
		t.Fatal(err)
	}
	if req, err := http.ReadRequest(bufio.NewReader(&wire)); err != nil {
		t.Fatal(err)
	} else if b, err := io.ReadAll(req.Body); err != nil || len(b) != 0 {
		t.Fatalf("empty body: %q, %v", b, err)
	}
}

// The connection's failure is the Write's, with nothing counted.
func TestChunkedBodyWriteFails(t *testing.T) {
	broke := errors.New("connection reset")
	cw := &chunkedBody{w: failAfter{n: 5, err: broke}, head: []byte("PUT / HTTP/1.1\r\n\r\n")}
	if n, err := cw.Write([]byte("data")); n != 0 || !errors.Is(err, broke) {
		t.Fatalf("write on a broken connection: %d, %v", n, err)
	}
}

type failAfter struct {
	n   int
	err error
}

func (f failAfter) Write(b []byte) (int, error) { return min(len(b), f.n), f.err }
