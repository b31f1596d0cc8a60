package client_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/resident-dev/resident/client"
	"github.com/resident-dev/resident/protocol"
)

// UploadSized sends exactly the size it was given: a source that grew is
// cut there, one that falls short fails the upload and writes nothing.
func TestUploadSized(t *testing.T) {
	r := spawn(t, client.Options{}, protocol.InitializeParams{InstallID: "upload-sized-test"})
	ctx := ctxT(t)
	id, err := r.Create(ctx, protocol.CreateParams{})
	if err != nil {
		t.Fatal(err)
	}
	cat := func(path string) string {
		var out bytes.Buffer
		if _, err := r.Exec(ctx, protocol.ExecParams{SandboxID: id, Argv: []string{"sh", "-c", "cat " + path + " 2>/dev/null; true"}}, client.Streams{Stdout: &out}); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if n, err := r.UploadSized(ctx, id, "grown", nil, strings.NewReader("hello world"), 5, nil); err != nil || n != 5 {
		t.Fatalf("upload of a source past its size: %d, %v", n, err)
	}
	if got := cat("grown"); got != "hello" {
		t.Fatalf("grown holds %q", got)
	}
	_, err = r.UploadSized(ctx, id, "short", nil, strings.NewReader("hi"), 5, nil)
	if !errors.Is(err, client.ErrInvalidRequest) {
		t.Fatalf("upload of a source short of its size: %v", err)
	}
	if got := cat("short"); got != "" {
		t.Fatalf("a short upload left %q", got)
	}
}
