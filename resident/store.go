package resident

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

func (s *session) needStore() (provider.Store, error) {
	if s.store == nil {
		return nil, invalid("provider %s has no persistent store", s.prov.Info().Name)
	}
	return s.store, nil
}

func listVolumes(ctx context.Context, s *session, _ *call, _ *struct{}) (*protocol.ListVolumesResult, error) {
	store, err := s.needStore()
	if err != nil {
		return nil, err
	}
	vols, err := store.ListVolumes(ctx)
	if err != nil {
		return nil, err
	}
	if vols == nil {
		vols = []protocol.Volume{}
	}
	return &protocol.ListVolumesResult{Volumes: vols}, nil
}

func listDir(ctx context.Context, s *session, _ *call, p *protocol.ListDirParams) (*protocol.ListDirResult, error) {
	store, err := s.needStore()
	if err != nil {
		return nil, err
	}
	if err := checkStorePath(p.Root, p.Path); err != nil {
		return nil, err
	}
	limit := p.Limit
	switch {
	case limit < 0:
		return nil, invalid("limit must not be negative")
	case limit == 0:
		limit = s.opts.Limits.DefaultListDirEntries
	}
	limit = min(limit, s.opts.Limits.MaxListDirEntries)
	entries, truncated, err := store.ListDir(ctx, p.Root, p.Path, limit)
	if err != nil {
		return nil, err
	}
	if entries == nil {
		entries = []protocol.DirEntry{}
	}
	return &protocol.ListDirResult{Entries: entries, Truncated: truncated}, nil
}

// readFile streams a file as store/data notifications, scrubbed like exec
// output. size and sha256 describe the bytes the host received, so it can
// check the transfer; redacted says the scrubber changed them, so they differ
// from the file.
func readFile(ctx context.Context, s *session, _ *call, p *protocol.ReadFileParams) (*protocol.ReadFileResult, error) {
	store, err := s.needStore()
	if err != nil {
		return nil, err
	}
	if err := checkStorePath(p.Root, p.Path); err != nil {
		return nil, err
	}
	if err := checkID("stream_id", p.StreamID); err != nil {
		return nil, err
	}
	file, err := store.ReadFile(ctx, p.Root, p.Path)
	if err != nil {
		return nil, err
	}
	chunks := readAhead(file) // owns file from here: stop closes it
	defer chunks.stop()

	hash := sha256.New()
	var sent int64
	send := &outputSender{s: s, prefix: dataPrefix(s.scrub.ScrubString(p.StreamID))}
	scrubbed := s.scrub.Stream(func(chunk []byte) error {
		hash.Write(chunk)
		sent += int64(len(chunk))
		return send.emit(chunk)
	})
	for {
		var c readChunk
		select {
		case c = <-chunks.full:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if c.n > 0 {
			_, err := scrubbed.Write(c.buf[:c.n])
			if err == nil {
				err = send.flush()
			}
			if err != nil {
				return nil, err
			}
		}
		chunks.free <- c.buf
		if errors.Is(c.err, io.EOF) {
			break
		}
		if c.err != nil {
			return nil, protocol.Errorf(protocol.KindTransient, "reading %s from volume %s: %w", p.Path, p.Root, c.err)
		}
	}
	if err := scrubbed.Flush(); err != nil {
		return nil, err
	}
	if err := send.flush(); err != nil {
		return nil, err
	}
	return &protocol.ReadFileResult{
		Size:     sent,
		SHA256:   hex.EncodeToString(hash.Sum(nil)),
		Redacted: scrubbed.Masks() > 0,
	}, nil
}

// readAhead reads the next chunk from the provider while the caller
// scrubs, encodes and writes the last one: on two cores the engine's socket
// read and the frame write then overlap instead of taking turns. Two
// buffers go round between the reader and the caller; the reader stops at
// the first error (io.EOF included) or when stop closes the file under it.
type readAheadChunks struct {
	full chan readChunk
	free chan []byte
	stop func()
}

type readChunk struct {
	buf []byte
	n   int
	err error
}

func readAhead(file io.ReadCloser) *readAheadChunks {
	const buffers = 2
	r := &readAheadChunks{full: make(chan readChunk, buffers), free: make(chan []byte, buffers)}
	for range buffers {
		r.free <- make([]byte, pumpBufferBytes)
	}
	done := make(chan struct{})
	quit := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var buf []byte
			select {
			case buf = <-r.free:
			case <-quit:
				return
			}
			n, err := file.Read(buf)
			// Never blocks: full holds as many chunks as there are buffers.
			r.full <- readChunk{buf: buf, n: n, err: err}
			if err != nil {
				return
			}
		}
	}()
	r.stop = func() {
		close(quit)
		file.Close() // ends a Read blocked on the engine
		<-done
	}
	return r
}

func dataPrefix(streamID string) []byte {
	id, _ := jsonMarshalString(streamID)
	prefix := []byte(`{"jsonrpc":"2.0","method":"` + protocol.NotifyStoreData + `","params":{"stream_id":`)
	prefix = append(prefix, id...)
	return append(prefix, `,"data":"`...)
}

func checkStorePath(root, path string) error {
	if err := checkID("root", root); err != nil {
		return err
	}
	if !printable(path) {
		return invalid("path must be printable")
	}
	return nil
}
