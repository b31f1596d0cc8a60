package docker

import (
	"archive/tar"
	"errors"
	"io"

	"github.com/resident-dev/resident/protocol"
)

// archiveFile returns the bytes of the archive's one regular file, exactly
// as many as its tar header announced, then io.EOF.
type archiveFile struct {
	helperID string
	tar      *tar.Reader
	left     int64
	close    func()
}

func (f *archiveFile) Read(b []byte) (int, error) {
	if f.left <= 0 {
		return 0, f.end()
	}
	if int64(len(b)) > f.left {
		b = b[:f.left]
	}
	n, err := f.tar.Read(b)
	f.left -= int64(n)
	if errors.Is(err, io.ErrUnexpectedEOF) || (err == io.EOF && f.left > 0) {
		return n, protocol.Errorf(protocol.KindTransient, "read_file: stream ended %d bytes early (file changed or unreadable)", f.left)
	}
	if err == io.EOF {
		err = nil // the next Read checks what follows the file
	}
	return n, err
}

// end checks that nothing follows the file in the archive: the engine
// sends one entry for one file, and a second would mean the stream is not
// what this reader takes it for.
func (f *archiveFile) end() error {
	if _, err := f.tar.Next(); err == nil {
		return protocol.Errorf(protocol.KindInternal, "read_file: the engine's archive holds more than the file")
	}
	return io.EOF
}

func (f *archiveFile) Close() error {
	f.close()
	return nil
}
