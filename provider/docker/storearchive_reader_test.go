package docker

import (
	"archive/tar"
	"bytes"
	"io"
	"testing"

	"github.com/resident-dev/resident/protocol"
)

// The archive's tar header announces the size: a stream that ends short is
// transient, and nothing after the file is ever passed on, whatever the
// reads' sizes.
func TestArchiveFileChecksWhatTheEngineSent(t *testing.T) {
	file := tarFile("f", []byte("0123456789"), 0o644)
	cases := []struct {
		name     string
		archive  []byte
		wantData string
		wantKind protocol.Kind
	}{
		{"one file", tarOf(file), "0123456789", ""},
		{"no trailer", tarOf(file)[:1024], "0123456789", ""},
		{"a second entry", tarOf(file, tarFile("g", []byte("SECRET"), 0o644)), "0123456789", protocol.KindInternal},
		{"cut in the file", tarOf(file)[:512+4], "0123", protocol.KindTransient},
		{"cut after the header", tarOf(file)[:512], "", protocol.KindTransient},
	}
	for _, c := range cases {
		for _, chunk := range []int{1, 3, 64 << 10} {
			f := &archiveFile{tar: tarReaderAtEntry(t, c.archive), left: 10, close: func() {}}
			var got bytes.Buffer
			_, err := io.CopyBuffer(&got, struct{ io.Reader }{f}, make([]byte, chunk))
			if got.String() != c.wantData || protocol.KindOf(err) != c.wantKind && !(c.wantKind == "" && err == nil) {
				t.Errorf("%s, %d-byte reads: %q, %v (%s); want %q, kind %q", c.name, chunk, got.String(), err, protocol.KindOf(err), c.wantData, c.wantKind)
			}
		}
	}
}

func tarReaderAtEntry(t *testing.T, archive []byte) *tar.Reader {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(archive))
	if _, err := tr.Next(); err != nil {
		t.Fatal(err)
	}
	return tr
}
