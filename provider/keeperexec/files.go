package keeperexec

import (
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/protocol"
)

// FileError maps a file operation the keeper refused to the protocol's
// reasons and kinds, once; a broken channel is transient.
func FileError(op, filePath string, err error) error {
	var fe *channel.FileError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe):
		msg := op + " " + filePath + ": " + fe.Msg
		if reason := protocol.Reason(fe.Reason); reason.Known() {
			field := fe.Field
			if field == "" {
				field = protocol.FieldPath
			}
			return protocol.ReasonError(reason, field, msg, nil)
		}
		kind := protocol.Kind(fe.Kind)
		if !kind.Known() {
			kind = protocol.KindInvalidRequest
		}
		return &protocol.Error{Kind: kind, Msg: msg}
	case errors.Is(err, channel.ErrBroken):
		return &protocol.Error{Kind: protocol.KindTransient, Msg: op + ": the sandbox's channel broke", Err: err}
	}
	return err
}

// Entries are a directory's entries as the keeper listed them, sorted by
// name.
func Entries(entries []channel.Entry) []protocol.DirEntry {
	out := make([]protocol.DirEntry, len(entries))
	for i, e := range entries {
		out[i] = protocol.DirEntry{Name: e.Name, Type: e.Type, Size: e.Size, Mtime: e.Mtime}
	}
	slices.SortFunc(out, func(a, b protocol.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// CountingReader counts what an upload read from its source: the size a
// streamed write_file answers.
type CountingReader struct {
	R io.Reader
	N int64
}

func (c *CountingReader) Read(b []byte) (int, error) {
	n, err := c.R.Read(b)
	c.N += int64(n)
	return n, err
}
