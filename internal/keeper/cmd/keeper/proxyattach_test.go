package main

import (
	"io"
	"net"
	"strings"
	"testing"
)

// TestAttachKeepsTheBytesAfterItsID: an attach may send the upstream's
// first bytes in the same segment as its id line; the proxy hands the held
// client a connection that still has them.
func TestAttachKeepsTheBytesAfterItsID(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() { _, _ = io.WriteString(a, "0123abcd\nfrom-upstream"); _ = a.Close() }()
	id, err := readIDLine(b)
	if err != nil || id != "0123abcd" {
		t.Fatalf("readIDLine = %q, %v", id, err)
	}
	rest, _ := io.ReadAll(b)
	if string(rest) != "from-upstream" {
		t.Fatalf("after the id the connection holds %q, want the upstream's bytes", rest)
	}
	if _, err := readIDLine(strings.NewReader(strings.Repeat("x", 100))); err == nil {
		t.Fatal("an id line of 100 bytes was taken")
	}
	if _, err := readIDLine(strings.NewReader("no-newline")); err == nil {
		t.Fatal("an id without its newline was taken")
	}
}
