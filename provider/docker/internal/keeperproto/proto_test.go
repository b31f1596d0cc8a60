package keeperproto

import (
	"bytes"
	"io"
	"testing"
)

func TestFramesRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	payloads := [][]byte{nil, []byte("x"), bytes.Repeat([]byte{0xff, 0}, MaxFramePayload/2)}
	for i, p := range payloads {
		if err := WriteFrame(&buf, FrameData+byte(i), p); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range payloads {
		typ, got, err := ReadFrame(&buf)
		if err != nil || typ != FrameData+byte(i) || !bytes.Equal(got, want) {
			t.Fatalf("frame %d: %c %d bytes %v", i, typ, len(got), err)
		}
	}
	if _, _, err := ReadFrame(&buf); err != io.EOF {
		t.Fatalf("after the last frame: %v", err)
	}
	if err := WriteFrame(&buf, FrameData, make([]byte, MaxFramePayload+1)); err == nil {
		t.Fatal("an oversized frame was written")
	}
	if _, _, err := ReadFrame(bytes.NewReader([]byte{'d', 0xff, 0xff, 0xff, 0xff})); err == nil {
		t.Fatal("an oversized frame was read")
	}
}
