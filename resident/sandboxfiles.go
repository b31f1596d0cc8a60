package resident

import (
	"context"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

func (s *session) needSandboxFiles() (provider.SandboxFiles, error) {
	if s.files == nil {
		return nil, invalid("provider %s cannot read files of a running sandbox (capabilities.sandbox_files is false)", s.prov.Info().Name)
	}
	return s.files, nil
}

// sandboxReadFile streams a file out of a running sandbox exactly as
// store/read_file streams one out of a volume.
func sandboxReadFile(ctx context.Context, s *session, _ *call, p *protocol.SandboxReadFileParams) (*protocol.ReadFileResult, error) {
	files, err := s.needSandboxFiles()
	if err != nil {
		return nil, err
	}
	if err := checkID("sandbox_id", p.SandboxID); err != nil {
		return nil, err
	}
	if err := checkPath("path", p.Path); err != nil {
		return nil, err
	}
	if err := checkID("stream_id", p.StreamID); err != nil {
		return nil, err
	}
	if err := s.checkOwned(ctx, p.SandboxID); err != nil {
		return nil, err
	}
	file, err := files.ReadSandboxFile(ctx, p.SandboxID, p.Path)
	if err != nil {
		return nil, err
	}
	return s.streamFile(ctx, p.StreamID, file, func(err error) error {
		return protocol.Errorf(protocol.KindTransient, "reading %s from sandbox %s: %w", p.Path, p.SandboxID, err)
	})
}

func sandboxListDir(ctx context.Context, s *session, _ *call, p *protocol.SandboxListDirParams) (*protocol.ListDirResult, error) {
	files, err := s.needSandboxFiles()
	if err != nil {
		return nil, err
	}
	if err := checkID("sandbox_id", p.SandboxID); err != nil {
		return nil, err
	}
	if err := checkPath("path", p.Path); err != nil {
		return nil, err
	}
	limit, err := s.listLimit(p.Limit)
	if err != nil {
		return nil, err
	}
	if err := s.checkOwned(ctx, p.SandboxID); err != nil {
		return nil, err
	}
	entries, truncated, err := files.ListSandboxDir(ctx, p.SandboxID, p.Path, limit)
	if err != nil {
		return nil, err
	}
	if entries == nil {
		entries = []protocol.DirEntry{}
	}
	return &protocol.ListDirResult{Entries: entries, Truncated: truncated}, nil
}

// listLimit is a list_dir's limit: 0 is the default, and no call lists more
// than the announced maximum.
func (s *session) listLimit(limit int) (int, error) {
	switch {
	case limit < 0:
		return 0, invalid("limit must not be negative")
	case limit == 0:
		limit = s.opts.Limits.DefaultListDirEntries
	}
	return min(limit, s.opts.Limits.MaxListDirEntries), nil
}
