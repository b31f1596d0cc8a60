package protocol

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestFrameReader(t *testing.T) {
	const limit = 64
	cases := []struct {
		name  string
		input string
		body  string // expected first body
		err   error  // expected error instead
	}{
		{"plain", "Content-Length: 2\r\n\r\n{}", "{}", nil},
		{"lowercase name", "content-length: 2\r\n\r\n{}", "{}", nil},
		{"other headers ignored", "Content-Type: application/vscode-jsonrpc\r\nContent-Length: 2\r\n\r\n{}", "{}", nil},
		{"LF only", "Content-Length: 2\n\n{}", "{}", nil},
		{"at the limit", "Content-Length: 64\r\n\r\n" + strings.Repeat("x", 64), strings.Repeat("x", 64), nil},
		{"one over the limit", "Content-Length: 65\r\n\r\n" + strings.Repeat("x", 65), "", ErrFrame},
		{"missing length", "X: 1\r\n\r\n{}", "", ErrFrame},
		{"zero", "Content-Length: 0\r\n\r\n", "", ErrFrame},
		{"negative", "Content-Length: -2\r\n\r\n{}", "", ErrFrame},
		{"non-numeric", "Content-Length: two\r\n\r\n{}", "", ErrFrame},
		{"2^31", "Content-Length: 2147483648\r\n\r\n", "", ErrFrame},
		{"2^63", "Content-Length: 9223372036854775808\r\n\r\n", "", ErrFrame},
		{"duplicate", "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", "", ErrFrame},
		{"no colon", "Content-Length 2\r\n\r\n{}", "", ErrFrame},
		{"header line too long", "X: " + strings.Repeat("a", MaxHeaderLineBytes) + "\r\nContent-Length: 2\r\n\r\n{}", "", ErrFrame},
		{"too many header lines", strings.Repeat("X: 1\r\n", MaxHeaderLines+1) + "Content-Length: 2\r\n\r\n{}", "", ErrFrame},
		{"truncated body", "Content-Length: 10\r\n\r\n{}", "", ErrFrame},
		{"EOF inside header", "Content-Len", "", ErrFrame},
		{"clean EOF", "", "", io.EOF},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body, err := NewFrameReader(strings.NewReader(c.input), limit).Read()
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("want %v, got body %q err %v", c.err, body, err)
				}
				return
			}
			if err != nil || string(body) != c.body {
				t.Fatalf("got %q, %v", body, err)
			}
		})
	}
}

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	bodies := []string{`{"a":1}`, `{"b":"` + strings.Repeat("z", 70000) + `"}`, `[]`}
	for _, b := range bodies {
		buf.Write(AppendFrame(nil, []byte(b)))
	}
	fr := NewFrameReader(&buf, 1<<20)
	for _, want := range bodies {
		got, err := fr.Read()
		if err != nil || string(got) != want {
			t.Fatalf("round trip: %v", err)
		}
	}
	if _, err := fr.Read(); err != io.EOF {
		t.Fatalf("want EOF, got %v", err)
	}
}

// FuzzFrameReader: no input panics, no body exceeds the limit, and memory
// stays bounded (the reader never allocates past the limit for a body).
func FuzzFrameReader(f *testing.F) {
	f.Add([]byte("Content-Length: 2\r\n\r\n{}"))
	f.Add([]byte("content-length: 5\r\nX: y\r\n\r\nhello"))
	f.Add([]byte("Content-Length: 999999999999\r\n\r\n"))
	f.Add([]byte("Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := NewFrameReader(bytes.NewReader(data), 1024)
		for range 100 {
			body, err := fr.Read()
			if err != nil {
				return
			}
			if len(body) == 0 || len(body) > 1024 {
				t.Fatalf("body of %d bytes", len(body))
			}
		}
	})
}

// ReadBodyInto reuses a buffer with room, grows past one without, and
// reads each body whole either way.
func TestReadBodyIntoRecycles(t *testing.T) {
	var in bytes.Buffer
	bodies := []string{`{"a":1}`, `{"b":2}`, `{"c":"` + strings.Repeat("z", 100) + `"}`, `{}`}
	for _, b := range bodies {
		in.Write(AppendFrame(nil, []byte(b)))
	}
	fr := NewFrameReader(&in, 1<<10)
	buf := make([]byte, 16)
	for i, want := range bodies {
		n, err := fr.ReadHeader()
		if err != nil {
			t.Fatal(err)
		}
		body, err := fr.ReadBodyInto(buf, n)
		if err != nil || string(body) != want {
			t.Fatalf("frame %d: %q, %v", i, body, err)
		}
		if reused := &body[0] == &buf[:1][0]; reused != (len(want) <= cap(buf)) {
			t.Fatalf("frame %d of %d bytes: reused the %d-byte buffer %v", i, len(want), cap(buf), reused)
		}
	}
}
