package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/resident-dev/resident/protocol"
)

// conn is the JSON-RPC half of a client: one writer that never interleaves
// frames, and one read loop that delivers responses by id and hands each
// notification to its sink in arrival order. Because notifications are
// handled on the read loop, every exec/output of an exec has been written to
// its io.Writer before the exec's response is delivered (the resident sends
// them first).
type conn struct {
	wmu  sync.Mutex
	w    io.Writer
	werr error  // first write error; later writes fail with it
	wbuf []byte // the last frame's buffer, for the next (under wmu)

	mu       sync.Mutex
	nextID   int64
	maxFrame int
	pending  map[int64]*pendingCall
	execs    map[string]*execSink
	reads    map[string]*readSink
	nullErr  *Error // the last error response with "id": null
	readErr  error  // why the read loop ended (io.EOF when cleanly)
	done     chan struct{}
	notify   func(method string, params any) // the notifications without a sink
}

type pendingCall struct {
	id     int64
	method string
	ch     chan response // buffered: the read loop never blocks on it
}

type response struct {
	result json.RawMessage
	err    *Error
	lost   bool // the read loop ended without an answer
}

type outgoing struct {
	JSONRPC string `json:"jsonrpc"`
	ID      *int64 `json:"id,omitempty"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

type incoming struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params *knownParams    `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *wireError      `json:"error"`
}

func newConn(w io.Writer, notify func(string, any)) *conn {
	return &conn{
		w:        w,
		maxFrame: protocol.DefaultMaxFrameBytes,
		pending:  map[int64]*pendingCall{},
		execs:    map[string]*execSink{},
		reads:    map[string]*readSink{},
		done:     make(chan struct{}),
		notify:   notify,
	}
}

// start registers a call and writes its request.
func (c *conn) start(method string, params any) (*pendingCall, error) {
	c.mu.Lock()
	if c.readErr != nil {
		c.mu.Unlock()
		return nil, errLost
	}
	c.nextID++
	pc := &pendingCall{id: c.nextID, method: method, ch: make(chan response, 1)}
	c.pending[pc.id] = pc
	c.mu.Unlock()
	if err := c.send(outgoing{ID: &pc.id, Method: method, Params: params}); err != nil {
		c.forget(pc.id)
		return nil, err
	}
	return pc, nil
}

func (c *conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// errLost stands in for "the read loop ended"; Client turns it into an
// *ExitError with what it knows about the process.
var errLost = errors.New("connection lost")

// send writes one message as one frame. A message over the resident's frame
// limit is refused here: sent, it would end the session (exit code 2).
// Data requests (upload/data, exec/stdin) are framed by hand into the
// writer's own buffer, their base64 encoded once and in place: through
// encoding/json each 256 KiB chunk was encoded, then copied twice, into
// three new buffers, and their garbage collection was a third of
// residentctl's CPU in a cp.
func (c *conn) send(msg outgoing) error {
	msg.JSONRPC = "2.0"
	c.mu.Lock()
	limit := c.maxFrame
	c.mu.Unlock()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	frame, bodyLen, fast := appendDataRequest(c.wbuf[:0], msg)
	if !fast {
		body, err := json.Marshal(msg)
		if err != nil {
			return fmt.Errorf("%s: encoding params: %w", msg.Method, err)
		}
		frame, bodyLen = protocol.AppendFrame(c.wbuf[:0], body), len(body)
	}
	if bodyLen > limit {
		return fmt.Errorf("%s: the request is %d bytes, over the resident's %d byte frame limit: %w", msg.Method, bodyLen, limit, ErrInvalidRequest)
	}
	if cap(frame) <= maxKeptFrame {
		c.wbuf = frame[:0]
	} else {
		c.wbuf = nil // one large write_file does not pin its frame
	}
	if _, err := c.w.Write(frame); err != nil {
		c.werr = fmt.Errorf("writing to the resident: %w", err)
		return c.werr
	}
	return nil
}

// maxKeptFrame is the largest frame buffer the writer and the read loop
// keep for the next frame: a 256 KiB chunk's frame and room.
const maxKeptFrame = 1 << 20

// readLoop runs until the stream ends or breaks, then fails every pending
// call. A frame the resident should never send (not JSON-RPC, a response to
// an id that is not a number) ends the session too: after it, an answer
// could be lost and its caller would wait forever.
func (c *conn) readLoop(r io.Reader) {
	fr := protocol.NewFrameReader(r, 1<<30) // the resident's own frames are not bounded by max_frame_bytes
	// Every frame is read into one buffer and a data frame's bytes decoded
	// into another, both reused: dispatch keeps nothing of a frame (results
	// are copied out as they are decoded, sinks write data out at once).
	var body, data []byte
	for {
		n, err := fr.ReadHeader()
		if err == nil {
			body, err = fr.ReadBodyInto(body, n)
		}
		if err == nil {
			data, err = c.dispatch(body, data)
		}
		if err != nil {
			c.end(err)
			return
		}
		if cap(body) > maxKeptFrame {
			body = nil
		}
		if cap(data) > maxKeptFrame {
			data = nil
		}
	}
}

// dispatch hands one frame to its call or sink; data is a buffer for a data
// frame's bytes, returned for the next frame.
func (c *conn) dispatch(body, data []byte) ([]byte, error) {
	if method, p, ok := decodeData(body, data); ok {
		c.notification(method, &p)
		return p.Data, nil
	}
	return data, c.dispatchJSON(body)
}

func (c *conn) dispatchJSON(body []byte) error {
	// One decoding pass for every message: notification params land in a
	// union of the known notifications' fields, so exec/output and
	// store/data (nearly every frame of a big transfer) are validated and
	// base64-decoded once, not once as a raw message and again as params.
	var m incoming
	if err := json.Unmarshal(body, &m); err != nil {
		// A notification this client does not know may have params of
		// other types; anything else is not a message.
		var generic struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &generic) == nil && generic.Method != "" {
			return nil
		}
		return fmt.Errorf("the resident sent a frame that is not a JSON-RPC message: %w", err)
	}
	if m.Method != "" {
		if m.Params != nil {
			c.notification(m.Method, m.Params)
		}
		return nil
	}
	if string(m.ID) == "null" || len(m.ID) == 0 {
		// An answer to no request: the resident could not read something
		// (a frame error, before it exits 2). Kept for the ExitError.
		if m.Error != nil {
			c.mu.Lock()
			c.nullErr = m.Error.toError("(no request)")
			c.mu.Unlock()
		}
		return nil
	}
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	if err != nil {
		return fmt.Errorf("the resident answered an id this client never sent: %s", m.ID)
	}
	c.mu.Lock()
	pc := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if pc == nil {
		return nil // an answer nobody waits for any more
	}
	r := response{result: m.Result}
	if m.Error != nil {
		r.err = m.Error.toError(pc.method)
	}
	pc.ch <- r
	return nil
}

// knownParams holds the params of every notification the resident sends;
// their field names do not overlap (protocol.ExecOutput, StoreData,
// CredentialsExpired, PullProgress, BuildProgress).
type knownParams struct {
	ExecID   string `json:"exec_id"`
	Stream   string `json:"stream"`
	StreamID string `json:"stream_id"`
	Data     []byte `json:"data"`
	Offset   *int64 `json:"offset"`
	Message  string `json:"message"`
	Image    string `json:"image"`
	Status   string `json:"status"`
	Layer    string `json:"layer"`
	Phase    string `json:"phase"`
	Current  int64  `json:"current"`
	Total    int64  `json:"total"`
	Tag      string `json:"tag"`
	Step     string `json:"step"`
	Line     string `json:"line"`
}

func (c *conn) notification(method string, p *knownParams) {
	switch method {
	case protocol.NotifyExecOutput:
		c.mu.Lock()
		sink := c.execs[p.ExecID]
		c.mu.Unlock()
		if sink != nil {
			sink.write(p.Stream, p.Data, p.Offset)
		}
	case protocol.NotifyStoreData:
		c.mu.Lock()
		sink := c.reads[p.StreamID]
		c.mu.Unlock()
		if sink != nil {
			sink.write(p.Data)
		}
	case protocol.NotifyCredentialsExpired:
		c.notify(method, protocol.CredentialsExpired{Message: p.Message})
	case protocol.NotifyPullProgress:
		c.notify(method, protocol.PullProgress{Image: p.Image, Status: p.Status, Layer: p.Layer, Phase: protocol.PullPhase(p.Phase), Current: p.Current, Total: p.Total})
	case protocol.NotifyBuildProgress:
		c.notify(method, protocol.BuildProgress{Tag: p.Tag, Step: p.Step, Line: p.Line})
	}
}

func (c *conn) end(err error) {
	c.mu.Lock()
	c.readErr = err
	pending := c.pending
	c.pending = map[int64]*pendingCall{}
	c.mu.Unlock()
	for _, pc := range pending {
		pc.ch <- response{lost: true}
	}
	close(c.done)
}

// ended returns the null-id error seen last, and why the read loop ended.
func (c *conn) ended() (*Error, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nullErr, c.readErr
}

func (c *conn) setMaxFrame(n int) {
	if n > 0 {
		c.mu.Lock()
		c.maxFrame = n
		c.mu.Unlock()
	}
}

// addExec routes exec/output for id to sink. An id already routed is refused
// here: the resident would answer conflict, but only after this client had
// sent the other exec's output to the wrong writers.
func (c *conn) addExec(id string, sink *execSink) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.execs[id]; dup {
		return fmt.Errorf("exec id %q is already running on this client: %w", id, ErrConflict)
	}
	c.execs[id] = sink
	return nil
}

func (c *conn) removeExec(id string) {
	c.mu.Lock()
	delete(c.execs, id)
	c.mu.Unlock()
}

func (c *conn) addRead(id string, sink *readSink) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.reads[id]; dup {
		return fmt.Errorf("stream id %q is already reading on this client: %w", id, ErrConflict)
	}
	c.reads[id] = sink
	return nil
}

func (c *conn) removeRead(id string) {
	c.mu.Lock()
	delete(c.reads, id)
	c.mu.Unlock()
}
