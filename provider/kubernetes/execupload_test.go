package kubernetes

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
)

// TestExecWriteOverADirectoryEnds: with exec=exec, write_file goes through
// one exec subresource stream of "keeper put", its data on the stream's
// stdin. A put refused before the data is in (a directory at the path)
// must end the call with its reason, with more data left to send than
// every buffer on the way holds (on Docker's exec path such an upload
// waited on full socket buffers: provider/docker/upload.go).
func TestExecWriteOverADirectoryEnds(t *testing.T) {
	p := newTestProviderMode(t, modeExec, nil)
	id := createFor(t, p, testOwner("put"), protocol.Spec{Image: cluster.Image})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, st, err := run(ctx, p, id, "mkdir", "-p", "/up"); err != nil || st.Code != 0 {
		t.Fatalf("mkdir: %q %v %v", out, st, err)
	}
	over := bytes.Repeat([]byte("0123456789abcdef"), 48<<20/16)
	err := p.WriteFile(ctx, id, "/up", over, nil)
	if protocol.KindOf(err) != protocol.KindInvalidRequest || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("write_file of 48 MiB over a directory: %v, want invalid_request saying it is a directory", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the refused write_file ran into the test's own bound")
	}
	if err := p.WriteFile(ctx, id, "/up/after", []byte("next"), nil); err != nil {
		t.Fatalf("the next write_file: %v", err)
	}
}
