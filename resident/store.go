package resident

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"sync"

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
	vols, err := store.ListVolumes(ctx, s.owner)
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
	limit, err := s.listLimit(p.Limit)
	if err != nil {
		return nil, err
	}
	entries, truncated, err := store.ListDir(ctx, s.owner, p.Root, p.Path, limit)
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
	file, err := store.ReadFile(ctx, s.owner, p.Root, p.Path)
	if err != nil {
		return nil, err
	}
	return s.streamFile(ctx, p.StreamID, file, func(err error) error {
		return protocol.Errorf(protocol.KindTransient, "reading %s from volume %s: %w", p.Path, p.Root, err)
	})
}

// streamFile sends file as store/data notifications for streamID, scrubbed
// like exec output, and closes it. readFailed words a read error that is not
// the request's end.
func (s *session) streamFile(ctx context.Context, streamID string, file io.ReadCloser, readFailed func(error) error) (*protocol.ReadFileResult, error) {
	defer file.Close()
	// The request's end closes the stream under a Read blocked on a hung
	// backend, whether or not the provider watches ctx itself.
	defer context.AfterFunc(ctx, func() { _ = file.Close() })()

	hash := sha256.New()
	var sent int64
	send := &outputSender{s: s, prefix: dataPrefix(s.scrub.ScrubString(streamID))}
	scrubbed := s.scrub.Stream(func(chunk []byte) error {
		hash.Write(chunk)
		sent += int64(len(chunk))
		return send.emit(chunk)
	})
	// One goroutine reads and sends in turn. A read-ahead goroutine was
	// measured: on two cores shared with the engine it added system time
	// and gained nothing, as the engine's archive work wants the other core.
	// Each frame carries a full buffer (a file is read for its whole, not
	// watched live), however small the provider's reads are: a Docker
	// stream gives 32 KiB at a time, and every frame costs the resident,
	// the pipe and the host as much again as its bytes.
	buf := fileChunks.Get().(*[]byte)
	defer fileChunks.Put(buf)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, rerr := io.ReadFull(file, *buf)
		if n > 0 {
			_, err := scrubbed.Write((*buf)[:n])
			if err == nil {
				err = send.flush()
			}
			if err != nil {
				return nil, err
			}
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			if err := ctx.Err(); err != nil {
				return nil, err // the provider's stream was closed by the request's end
			}
			return nil, readFailed(rerr)
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

// fileChunkBytes is the most file bytes in one store/data: 256 KiB, a
// frame of 350 KB, far under max_frame_bytes and small enough that a
// session's frame buffer keeps it (see flushLocked).
const fileChunkBytes = 256 << 10

// fileChunks recycles streamFile's buffers across reads.
var fileChunks = sync.Pool{New: func() any { b := make([]byte, fileChunkBytes); return &b }}

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
	return checkPath("path", path)
}
