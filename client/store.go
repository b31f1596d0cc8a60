package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"sync"

	"github.com/resident-dev/resident/protocol"
)

// ListVolumes lists the persistent volumes (store/list_volumes). Needs
// capabilities.store. The list is never nil.
func (c *Client) ListVolumes(ctx context.Context) ([]protocol.Volume, error) {
	var res protocol.ListVolumesResult
	if err := c.call(ctx, protocol.MethodStoreVolumes, nil, &res); err != nil {
		return nil, err
	}
	if res.Volumes == nil {
		res.Volumes = []protocol.Volume{}
	}
	return res.Volumes, nil
}

// ListDir lists a directory of a volume (store/list_dir); p.Path "" is the
// volume's root and p.Limit 0 means 1000. Needs capabilities.store.
func (c *Client) ListDir(ctx context.Context, p protocol.ListDirParams) (*protocol.ListDirResult, error) {
	var res protocol.ListDirResult
	if err := c.call(ctx, protocol.MethodStoreListDir, p, &res); err != nil {
		return nil, err
	}
	if res.Entries == nil {
		res.Entries = []protocol.DirEntry{}
	}
	return &res, nil
}

// ReadFile streams a file of a volume into w (store/read_file) and checks
// what arrived against the result's size and sha256. Result.Redacted says
// the scrubber changed the content, so the bytes differ from the file on
// disk. Needs capabilities.store.
func (c *Client) ReadFile(ctx context.Context, root, path string, w io.Writer) (*protocol.ReadFileResult, error) {
	return c.readStream(ctx, protocol.MethodStoreReadFile, path, w, func(streamID string) any {
		return protocol.ReadFileParams{Root: root, Path: path, StreamID: streamID}
	})
}

// readStream runs a read whose bytes come as store/data for a stream of
// its own, and checks them against the result.
func (c *Client) readStream(ctx context.Context, method, path string, w io.Writer, params func(streamID string) any) (*protocol.ReadFileResult, error) {
	streamID := c.newID("read")
	sink := &readSink{w: w, sum: sha256.New()}
	if err := c.conn.addRead(streamID, sink); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	defer c.conn.removeRead(streamID)
	var res protocol.ReadFileResult
	if err := c.call(ctx, method, params(streamID), &res); err != nil {
		return nil, err
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.err != nil {
		return &res, fmt.Errorf("%s %s: %w", method, path, sink.err)
	}
	if got := hex.EncodeToString(sink.sum.Sum(nil)); sink.n != res.Size || got != res.SHA256 {
		return &res, fmt.Errorf("%s %s: received %d bytes with sha256 %s, the resident sent %d with %s: %w",
			method, path, sink.n, got, res.Size, res.SHA256, ErrTransient)
	}
	return &res, nil
}

// readSink receives one read's store/data on the read loop. After a write
// error it keeps counting, so the transfer still completes and the result
// still arrives.
type readSink struct {
	mu  sync.Mutex
	w   io.Writer
	sum hash.Hash
	n   int64
	err error
}

func (s *readSink) write(data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sum.Write(data)
	s.n += int64(len(data))
	if s.err == nil {
		if _, err := s.w.Write(data); err != nil {
			s.err = fmt.Errorf("writing: %w", err)
		}
	}
}
