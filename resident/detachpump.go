package resident

import (
	"errors"
	"io"
	"strconv"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// detachedPump streams a detached exec's chunks to the host, scrubbed, each
// exec/output carrying the offset where an attach would resume right after
// it. The scrubber holds back the bytes that may begin a secret, so the
// resume point is the first byte still held in either stream, which needs
// the offsets of each stream's recent bytes (segments): a few, since only
// a short tail is ever held.
type detachedPump struct {
	s       *session
	execID  []byte // JSON string, scrubbed
	streams [2]*detachedStream
	resume  int64 // everything before it has reached the host
	end     int64 // the end of the output read so far
}

type detachedStream struct {
	name     string
	scrubbed *hardening.Stream
	out      []byte // what the scrubber emitted for the current chunk
	fed      int64  // raw bytes of this stream given to the scrubber
	segments []segment
	total    int64 // raw bytes of this stream
	dropped  int64 // bytes past the output cap, counted and never sent
}

// segment maps a run of a stream's bytes to their offset in the exec's
// output.
type segment struct {
	streamStart, offset, n int64
}

func newDetachedPump(s *session, execID string, offset int64) *detachedPump {
	id, _ := jsonMarshalString(execID)
	p := &detachedPump{s: s, execID: id, resume: offset, end: offset}
	for i, name := range []string{protocol.StreamStdout, protocol.StreamStderr} {
		ds := &detachedStream{name: name}
		ds.scrubbed = s.scrub.Stream(func(b []byte) error {
			ds.out = append(ds.out, b...)
			return nil
		})
		p.streams[i] = ds
	}
	return p
}

// run reads the attachment to its end (nil) or until it breaks.
func (p *detachedPump) run(att provider.Attachment) error {
	for {
		chunk, err := att.Next()
		if errors.Is(err, io.EOF) {
			return p.finish()
		}
		if err != nil {
			return err
		}
		if err := p.feed(chunk); err != nil {
			return err
		}
	}
}

func (p *detachedPump) feed(c provider.OutputChunk) error {
	ds := p.streams[0]
	if c.Stream == protocol.StreamStderr {
		ds = p.streams[1]
	}
	n := int64(len(c.Data))
	p.end = max(p.end, c.Offset+n)
	ds.total += n
	keep := n
	if limit := p.s.opts.Limits.OutputCapBytes; ds.total-ds.dropped > limit {
		keep = max(n-(ds.total-ds.dropped-limit), 0)
	}
	ds.dropped += n - keep
	if keep > 0 {
		ds.segments = append(ds.segments, segment{streamStart: ds.fed, offset: c.Offset, n: keep})
		ds.fed += keep
		_, _ = ds.scrubbed.Write(c.Data[:keep])
	}
	return p.send(ds)
}

// finish flushes what the scrubbers still hold: the exec has ended, so no
// later byte can complete a secret.
func (p *detachedPump) finish() error {
	for _, ds := range p.streams {
		if ds.dropped == 0 {
			_ = ds.scrubbed.Flush()
		}
		ds.segments = nil
	}
	for _, ds := range p.streams {
		if err := p.send(ds); err != nil {
			return err
		}
	}
	return nil
}

// send writes what the scrubber emitted for ds, if anything, with the new
// resume offset.
func (p *detachedPump) send(ds *detachedStream) error {
	p.resume = p.end
	for _, st := range p.streams {
		if held := st.firstHeld(); held >= 0 && held < p.resume {
			p.resume = held
		}
	}
	if len(ds.out) == 0 {
		return nil
	}
	prefix := make([]byte, 0, 128)
	prefix = append(prefix, `{"jsonrpc":"2.0","method":"`+protocol.NotifyExecOutput+`","params":{"exec_id":`...)
	prefix = append(prefix, p.execID...)
	prefix = append(prefix, `,"stream":"`+ds.name+`","offset":`...)
	prefix = strconv.AppendInt(prefix, p.resume, 10)
	prefix = append(prefix, `,"data":"`...)
	err := p.s.stream.writeData(prefix, nil, ds.out)
	ds.out = ds.out[:0]
	if err != nil && errors.Is(err, errHostGone) {
		return nil // the host went: keep reading so the attachment ends cleanly
	}
	return err
}

// firstHeld is the exec-output offset of the first byte the scrubber still
// holds for this stream, or -1 when it holds none. Segments wholly before it
// are forgotten.
func (ds *detachedStream) firstHeld() int64 {
	held := int64(ds.scrubbed.Buffered())
	if held == 0 {
		ds.segments = ds.segments[:0]
		return -1
	}
	at := ds.fed - held // stream position of the first held byte
	for len(ds.segments) > 0 && ds.segments[0].streamStart+ds.segments[0].n <= at {
		ds.segments = ds.segments[1:]
	}
	if len(ds.segments) == 0 {
		return -1
	}
	sg := ds.segments[0]
	return sg.offset + (at - sg.streamStart)
}
