package channel

import (
	"context"
	"encoding/binary"
	"fmt"
	"path"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// FileInfo is what the keeper found of a file as the user: its own path
// (no symlink on it; empty if the keeper could not tell), permission bits,
// owner, size, modification time, and whether it lies on the sandbox's
// root filesystem.
type FileInfo = keeperproto.FileInfo

// StatFile opens path as user the way ReadFile does (same checks, same
// *FileError) and says what it is, reading none of it: a caller that moves
// the bytes on another transport checks there that it got this file.
// ErrUnsupported from a keeper without FeatureFileStage.
func (c *Conn) StatFile(ctx context.Context, path, user string) (FileInfo, error) {
	if !c.Supports(keeperproto.FeatureFileStage) {
		return FileInfo{}, ErrUnsupported
	}
	st, err := c.newStream(false)
	if err != nil {
		return FileInfo{}, err
	}
	defer c.forget(st)
	if err := c.sendJSON(keeperproto.ChanReadFile, st.id, keeperproto.ReadFile{Path: path, User: user, Window: c.window, StatOnly: true}); err != nil {
		return FileInfo{}, err
	}
	f, err := st.answer(ctx, false)
	if err != nil {
		return FileInfo{}, err
	}
	res, err := decodeResult(f)
	if err != nil {
		return FileInfo{}, withPath(err, "read_file", path)
	}
	if res.File == nil {
		return FileInfo{}, fmt.Errorf("%w: stat of %s: no file in the answer", ErrBroken, path)
	}
	return *res.File, nil
}

// Stage is a write whose bytes come by other means: the keeper checked it
// as the user and made Dir, the staging directory beside the target; the
// caller puts the file there as keeperproto.StagedFile, owned by UID:GID
// with Mode, then Commits or Aborts. Exactly one of them must be called.
type Stage struct {
	FileInfo // Path is the staging directory, UID, GID and Mode the file's
	c        *Conn
	st       *cstream
	path     string
}

// StagedPath is where the staged file goes.
func (s *Stage) StagedPath() string { return path.Join(s.Path, path.Base(s.Path)) }

// StageFile checks a write of path as user (the checks and *FileError of
// WriteFile) and makes the staging directory. mode as for WriteFile.
// ErrUnsupported from a keeper without FeatureFileStage.
func (c *Conn) StageFile(ctx context.Context, path string, mode *uint32, user string) (*Stage, error) {
	if !c.Supports(keeperproto.FeatureFileStage) {
		return nil, ErrUnsupported
	}
	st, err := c.newStream(false)
	if err != nil {
		return nil, err
	}
	if err := c.sendJSON(keeperproto.ChanWriteFile, st.id, keeperproto.WriteFile{Path: path, Mode: mode, User: user, Staged: true}); err != nil {
		c.forget(st)
		return nil, err
	}
	f, err := st.answer(ctx, false) // a cancel releases: the keeper removes the directory
	if err != nil {
		return nil, err
	}
	res, err := decodeResult(f)
	if err != nil {
		c.forget(st)
		return nil, withPath(err, "write_file", path)
	}
	if res.File == nil {
		(&Stage{c: c, st: st, path: path}).Abort()
		return nil, fmt.Errorf("%w: staged write of %s: no staging directory in the answer", ErrBroken, path)
	}
	return &Stage{FileInfo: *res.File, c: c, st: st, path: path}, nil
}

// Commit says the staged file of size bytes is in place: the keeper checks
// it and renames it over the target as the user. It waits for the keeper's
// verdict whatever happens to the caller meanwhile (only the keeper knows
// whether the rename won); the staging directory is gone when it returns.
func (s *Stage) Commit(size int64) error {
	defer s.c.forget(s.st)
	if s.st.input.take(8) != 8 {
		return s.c.writeAnswer(s.st, s.path)
	}
	if err := s.c.send(keeperproto.ChanStdin, s.st.id, binary.BigEndian.AppendUint64(nil, uint64(size))); err != nil {
		return err
	}
	if err := s.c.send(keeperproto.ChanStdinEOF, s.st.id, nil); err != nil {
		return err
	}
	return s.c.writeAnswer(s.st, s.path)
}

// Abort gives the write up: the keeper removes the staging directory and
// all in it, and answers once it has (bounded by abandonWait).
func (s *Stage) Abort() {
	defer s.c.forget(s.st)
	_ = s.c.send(keeperproto.ChanRelease, s.st.id, nil)
	wait, cancel := context.WithTimeout(context.Background(), abandonWait)
	defer cancel()
	_, _ = s.st.answer(wait, false)
}
