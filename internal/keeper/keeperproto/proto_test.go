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

func TestMarksAreInTheirRangeAndApartFromTheKeeperUID(t *testing.T) {
	for _, token := range []string{"0000000", "fffffff", "0123456789abcdef01234567", "a1b2c3d4e5f6"} {
		m, ok := Mark(token)
		if !ok || !IsMark(m) || m >= 1<<31 {
			t.Errorf("Mark(%q) = %#x %v", token, m, ok)
		}
	}
	if a, _ := Mark("0123456aaaa"); a != MarkBase+0x0123456 {
		t.Errorf("Mark is not the token's first 28 bits: %#x", a)
	}
	for _, bad := range []string{"", "012345", "012345G", "ABCDEF0"} {
		if _, ok := Mark(bad); ok {
			t.Errorf("Mark(%q) accepted", bad)
		}
	}
	if IsMark(KeeperUID) || IsMark(MarkBase-1) || IsMark(MarkBase+MarkSpan) {
		t.Error("IsMark accepts a gid outside the range")
	}
}
