package resident

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/protocol"
)

// frameStream is the jsonrpc2.ObjectStream under the connection. Reading, it
// validates every message itself and answers the ones a session survives
// (bad JSON, batches, bad ids) directly, so the library only ever sees
// well-formed requests. Writing, it scrubs and frames under one lock so
// frames never interleave.
type frameStream struct {
	reader   *protocol.FrameReader
	closer   io.Closer
	scrubber *hardening.Scrubber
	log      *zap.Logger

	writeMu sync.Mutex
	w       io.Writer
	buf     []byte
	werr    error // first write error; after it every write fails fast

	// readErr is the error that ended reading (io.EOF or a frame error).
	readErr error

	// budget, when set, is charged for every frame before its body is
	// read; readCtx ends a wait for room in it.
	budget  *hostBudget
	readCtx context.Context
	// next hands the request ReadObject returned to Handle: see incoming.
	next incoming
	// spare is the body of the last data frame whose data was cut out, for
	// the next frame to be read into (the reader goroutine's alone).
	spare []byte
}

// incoming is a request as read from the host, handed from ReadObject to
// Handle, which jsonrpc2's read loop calls for it before reading the next
// frame. The library is given only the envelope: it would decode the params
// into a map of interface values and encode them again, several copies of a
// frame that can be 16 MiB. The session gets the params as a slice of the
// frame body and the budget hold that pays for that body.
type incoming struct {
	params []byte
	// data is the params' base64 data, decoded, when it was cut out of the
	// frame (see protocol.ParseDataEnvelope); nil otherwise.
	data []byte
	hold *hold
}

// take returns the request ReadObject read last and forgets it.
func (s *frameStream) take() incoming {
	in := s.next
	s.next = incoming{}
	return in
}

func newFrameStream(rwc io.ReadWriteCloser, maxFrame int, scrubber *hardening.Scrubber, log *zap.Logger) *frameStream {
	return &frameStream{
		reader:   protocol.NewFrameReader(rwc, maxFrame),
		closer:   rwc,
		w:        rwc,
		scrubber: scrubber,
		log:      log,
		readCtx:  context.Background(),
	}
}

// ReadObject returns the next request or notification. Only the reader
// goroutine of the connection calls it. A frame is charged to the budget
// before its body is read; when the budget has no room, reading waits.
func (s *frameStream) ReadObject(v any) error {
	for {
		n, err := s.reader.ReadHeader()
		if err != nil {
			s.readErr = err
			return err
		}
		h, err := s.budget.acquire(s.readCtx, max(int64(n), requestOverhead))
		if err != nil {
			s.readErr = err
			return err
		}
		body, err := s.reader.ReadBodyInto(s.spare, n)
		s.spare = nil
		if err != nil {
			h.release()
			s.readErr = err
			return err
		}
		data := dataBuffers.get()
		env, bad := protocol.ParseDataEnvelopeInto(body, data)
		if env.Data != nil {
			// Nothing of a frame whose data was cut out refers to its
			// body: the next frame is read into it.
			s.spare = body
		} else {
			dataBuffers.put(data)
		}
		switch {
		case bad != nil:
			h.release()
			s.log.Info("message refused", zap.Int64("code", bad.Code), zap.String("reason", bad.Msg))
			s.writeError(bad.ID, bad.Code, protocol.KindInvalidRequest, bad.Msg)
			continue
		case env.Response:
			h.release()
			s.log.Debug("response from host ignored: the resident sends no requests")
			continue
		}
		s.next = incoming{params: env.Params, data: env.Data, hold: h}
		return json.Unmarshal(envelopeOnly(env), v)
	}
}

// envelopeOnly is the request or notification without its params.
func envelopeOnly(env protocol.Envelope) []byte {
	method, _ := json.Marshal(env.Method)
	msg := append([]byte(`{"jsonrpc":"2.0","method":`), method...)
	if env.ID != nil {
		msg = append(append(append(msg, `,"id":`...), env.ID...), '}')
		return msg
	}
	return append(msg, '}')
}

// WriteObject frames a message from the connection, scrubbing its JSON text
// (secrets are registered in their JSON-escaped forms too).
func (s *frameStream) WriteObject(obj any) error {
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return s.writeFrame(s.scrubber.ScrubJSON(body))
}

// writeScrubbedNotification is for notifications with text fields.
func (s *frameStream) writeScrubbedNotification(method string, params any) error {
	return s.WriteObject(notification{JSONRPC: "2.0", Method: method, Params: params})
}

type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

type errorResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   wireError       `json:"error"`
}

type wireError struct {
	Code    int64              `json:"code"`
	Message string             `json:"message"`
	Data    protocol.ErrorData `json:"data"`
}

// writeError answers a message the connection never saw; id nil is null.
func (s *frameStream) writeError(id json.RawMessage, code int64, kind protocol.Kind, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	resp := errorResponse{JSONRPC: "2.0", ID: id, Error: wireError{Code: code, Message: msg, Data: protocol.ErrorData{Kind: kind}}}
	if err := s.WriteObject(resp); err != nil {
		s.log.Debug("error response not written", zap.Error(err))
	}
}

func (s *frameStream) writeFrame(body []byte) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.werr != nil {
		return s.werr
	}
	s.buf = protocol.AppendFrame(s.buf[:0], body)
	return s.flushLocked()
}

// writeData frames a data notification (exec/output, store/data) whose
// body is prefix, head and data in base64, and the closing: it is encoded
// straight into the frame buffer, so a chunk is copied once and no stream
// keeps a body buffer of its own. head is nil or whole base64 quanta (see
// appendDataBody). The caller's streaming scrubber has already scrubbed
// head and data.
func (s *frameStream) writeData(prefix, head, data []byte) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.werr != nil {
		return s.werr
	}
	s.buf = protocol.AppendFrameHeader(s.buf[:0], dataBodyLen(prefix, head, data))
	s.buf = appendDataBody(s.buf, prefix, head, data)
	return s.flushLocked()
}

// flushLocked writes s.buf; writeMu is held.
func (s *frameStream) flushLocked() error {
	if _, err := s.w.Write(s.buf); err != nil {
		s.werr = errors.Join(errHostGone, err)
		return s.werr
	}
	if cap(s.buf) > 1<<20 {
		s.buf = nil // don't pin a large frame's buffer for the session's life
	}
	return nil
}

// Close is called by the connection when reading ends. Writing must go on
// until every in-flight request is answered, so Serve closes the stream.
func (s *frameStream) Close() error { return nil }

var errHostGone = errors.New("host stopped reading")
