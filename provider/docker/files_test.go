package docker

import (
	"testing"

	"github.com/resident-dev/resident/protocol"
)

// perm is a write_file mode the host gave.
func perm(mode uint32) *uint32 { return &mode }

func TestWriteFile(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{Workdir: "/work"}, nil)
	ctx := testCtx(t)
	before := sh(t, p, id, "stat -c '%a %U' /bin /")
	if err := p.WriteFile(ctx, id, "/new/deep/dir/f.sh", []byte("#!/bin/sh\necho ran\n"), perm(0o750)); err != nil {
		t.Fatal(err)
	}
	if out := sh(t, p, id, "stat -c '%a %U' /new /new/deep /new/deep/dir /new/deep/dir/f.sh && /new/deep/dir/f.sh"); out != "755 root\n755 root\n755 root\n750 root\nran\n" {
		t.Fatalf("created parents and file: %q", out)
	}
	// Into an existing directory: the directory is left as it was.
	if err := p.WriteFile(ctx, id, "/bin/mine", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	if after := sh(t, p, id, "stat -c '%a %U' /bin /"); after != before {
		t.Fatalf("existing directories changed: %q -> %q", before, after)
	}
	// Binary content, exactly.
	data := make([]byte, 256<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := p.WriteFile(ctx, id, "/work/blob", data, perm(0o600)); err != nil {
		t.Fatal(err)
	}
	if out := sh(t, p, id, "wc -c < /work/blob; stat -c %a /work/blob"); out != "262144\n600\n" {
		t.Fatalf("blob: %q", out)
	}
	if err := p.WriteFile(ctx, id, "/work/blob/under-a-file", []byte("x"), perm(0o600)); protocol.KindOf(err) != protocol.KindInvalidRequest {
		t.Fatalf("a parent that is a file: %v", err)
	}
}
