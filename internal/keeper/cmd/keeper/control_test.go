package main

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// A control stream that stops being frames the provider wrote ends the
// exec at once: the kill is triggered, never waited for.
func TestACorruptedControlFrameKillsTheExec(t *testing.T) {
	data := func(payload string) []byte {
		var b bytes.Buffer
		_ = keeperproto.WriteFrame(&b, keeperproto.FrameData, []byte(payload))
		return b.Bytes()
	}
	cases := map[string][]byte{
		"unknown type": append(data("x"), 'z', 0, 0, 0, 0),
		"oversized":    append(data("x"), 'd', 0xff, 0xff, 0xff, 0xff),
	}
	for name, stream := range cases {
		t.Run(name, func(t *testing.T) {
			k := newTreeKiller(func() {})
			go k.loop()
			// The provider's end stays open: only the bad frame can end it.
			open, hold := io.Pipe()
			defer hold.Close()
			go control(io.MultiReader(bytes.NewReader(stream), open), nil, k)
			select {
			case <-k.done:
			case <-time.After(10 * time.Second):
				t.Fatal("a corrupted control frame did not kill the exec")
			}
		})
	}
}
