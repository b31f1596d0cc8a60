package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/resident-dev/resident/protocol"
)

// Data frames and messages written on one stream come back in their order,
// the data to OnData and never to the JSON side.
func TestStreamDataFramesKeepTheirPlace(t *testing.T) {
	var wire bytes.Buffer
	w := NewStream(nil, &wire, nil, 1<<20)
	for _, step := range []func() error{
		func() error { return w.WriteObject(map[string]int{"a": 1}) },
		func() error { return w.WriteData("c1", []byte("first\r\n\r\nContent-Length: 3\r\n")) },
		func() error { return w.WriteData("c2", bytes.Repeat([]byte{0, 255}, 40000)) },
		func() error { return w.WriteObject(map[string]int{"b": 2}) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	r := NewStream(&wire, nil, nil, 1<<20)
	r.OnData = func(id string, data []byte) { got = append(got, id+":"+string(data[:min(len(data), 5)])) }
	for _, want := range []string{`{"a":1}`, `{"b":2}`} {
		var m json.RawMessage
		if err := r.ReadObject(&m); err != nil || string(m) != want {
			t.Fatalf("read %s, %v; want %s", m, err, want)
		}
		if want == `{"a":1}` && len(got) != 0 {
			t.Fatalf("data before its place: %q", got)
		}
	}
	if len(got) != 2 || got[0] != "c1:first" || got[1] != "c2:\x00\xff\x00\xff\x00" {
		t.Fatalf("data frames %q", got)
	}
	var m json.RawMessage
	if err := r.ReadObject(&m); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v", err)
	}
}

func TestStreamRefusesBadDataFrames(t *testing.T) {
	for name, frame := range map[string]string{
		"no handler":      "Content-Length: 1\r\nConn-Data: c1\r\n\r\nx",
		"two ids":         "Content-Length: 1\r\nConn-Data: c1\r\nConn-Data: c2\r\n\r\nx",
		"empty id":        "Content-Length: 1\r\nConn-Data: \r\n\r\nx",
		"over the limit":  "Content-Length: 99\r\nConn-Data: c1\r\n\r\nx",
		"short body":      "Content-Length: 5\r\nConn-Data: c1\r\n\r\nx",
		"no length":       "Conn-Data: c1\r\n\r\nx",
		"zero length":     "Content-Length: 0\r\nConn-Data: c1\r\n\r\n",
		"no colon":        "Content-Length 1\r\n\r\nx",
		"ended in header": "Content-Length: 1\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			r := NewStream(bytes.NewBufferString(frame), nil, nil, 16)
			if name != "no handler" {
				r.OnData = func(string, []byte) {}
			}
			var m json.RawMessage
			if err := r.ReadObject(&m); !errors.Is(err, protocol.ErrFrame) {
				t.Fatalf("%q: %v, want a framing error", frame, err)
			}
		})
	}
	w := NewStream(nil, io.Discard, nil, 16)
	if err := w.WriteData("c1", nil); protocol.KindOf(err) != protocol.KindInternal {
		t.Fatalf("an empty data frame: %v", err)
	}
	if err := w.WriteData("c1", make([]byte, 17)); protocol.KindOf(err) != protocol.KindInternal {
		t.Fatalf("a data frame over the limit: %v", err)
	}
}

// FuzzStreamRead: whatever the other side writes, the reader returns
// messages, data or an error, never panics, and never hands a data frame
// over the limit to OnData.
func FuzzStreamRead(f *testing.F) {
	f.Add([]byte("Content-Length: 2\r\n\r\n{}"))
	f.Add([]byte("Content-Length: 3\r\nConn-Data: c1\r\n\r\nabcContent-Length: 2\r\n\r\n{}"))
	f.Add([]byte("content-length: 1\nconn-data: c9\n\nx"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewStream(bytes.NewReader(in), nil, nil, 64)
		r.OnData = func(id string, data []byte) {
			if id == "" || len(data) == 0 || len(data) > 64 {
				t.Fatalf("data frame %q of %d bytes", id, len(data))
			}
		}
		for range 100 {
			var m json.RawMessage
			if err := r.ReadObject(&m); err != nil {
				return
			}
		}
	})
}
