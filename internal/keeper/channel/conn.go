package channel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// DefaultWindow is the per-stream credit when Options.Window is 0.
const DefaultWindow = 256 << 10

// Options configure a Conn.
type Options struct {
	// Logger gets the channel's own events (takeover, fence, resyncs);
	// nil for none.
	Logger *zap.Logger
	// Window is the credit, in bytes, this side grants each stream's
	// output: how much the keeper may send before the reader consumes it.
	Window int
	// Lease is how long this holder may stay silent before the keeper
	// treats it as gone (kills its non-detached execs, refuses its frames):
	// the Conn pings three times within it. An attach stream never tells
	// the keeper its holder died; this does. 0 is DefaultLease; negative
	// asks for no lease (the transport's end is the only sign).
	Lease time.Duration
}

// DefaultLease is Options.Lease when 0.
const DefaultLease = 6 * time.Second

// Conn is one holder's channel to one keeper.
type Conn struct {
	rw      io.ReadWriteCloser
	log     *zap.Logger
	window  int
	welcome keeperproto.Welcome
	gen     atomic.Uint64

	wmu  sync.Mutex
	wbuf []byte

	mu      sync.Mutex
	streams map[uint32]*cstream
	next    uint32

	done    chan struct{}
	err     error
	breakMu sync.Once
	readers sync.WaitGroup
}

// Open takes the channel over rw: a hello that takes over (the keeper
// bumps its lease generation; frames of any older generation are refused
// from then on and their sender is told it was fenced) and learns what the
// keeper supports. It returns once the keeper welcomed it, or ctx ended.
// The Conn owns rw from then on and closes it on Close or when it breaks.
func Open(ctx context.Context, rw io.ReadWriteCloser, o Options) (*Conn, error) {
	c := &Conn{rw: rw, log: o.Logger, window: o.Window, streams: map[uint32]*cstream{}, done: make(chan struct{})}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	if c.window <= 0 {
		c.window = DefaultWindow
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	hello := keeperproto.Hello{Version: keeperproto.ChanVersion, Nonce: hex.EncodeToString(nonce[:])}
	lease := o.Lease
	if lease == 0 {
		lease = DefaultLease
	}
	if lease > 0 {
		hello.LeaseMS = max(1, lease.Milliseconds())
	}
	welcomed := make(chan keeperproto.Welcome, 1)
	c.readers.Add(1)
	go c.readLoop(hello.Nonce, welcomed)
	if err := c.sendJSON(keeperproto.ChanHello, 0, hello); err != nil {
		c.Close()
		return nil, err
	}
	select {
	case w := <-welcomed:
		c.log.Debug("keeper channel open", zap.Uint64("generation", w.Generation), zap.Bool("protected", w.Protected))
		if lease > 0 {
			c.readers.Add(1)
			go c.ping(lease / 3)
		}
		return c, nil
	case <-c.done:
		err := c.Err()
		c.Close()
		return nil, err
	case <-ctx.Done():
		c.Close()
		return nil, fmt.Errorf("keeper channel: hello: %w", ctx.Err())
	}
}

// Generation is the lease generation this Conn holds.
func (c *Conn) Generation() uint64 { return c.gen.Load() }

// Protected reports whether the keeper runs protected (its own uid,
// non-dumpable, execs marked); false when it was not started as root.
func (c *Conn) Protected() bool { return c.welcome.Protected }

// Supports reports whether the keeper announced a feature
// (keeperproto.Feature*).
func (c *Conn) Supports(feature string) bool { return slices.Contains(c.welcome.Features, feature) }

// Done is closed when the channel broke or was closed.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why Done closed (ErrBroken or ErrFenced, wrapping the cause);
// nil while the channel works.
func (c *Conn) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// Close ends the channel: non-detached execs die with it (the keeper kills
// their trees), detached ones go on. It waits for the Conn's reader.
func (c *Conn) Close() error {
	c.fail(fmt.Errorf("%w: closed", ErrBroken))
	c.readers.Wait()
	return nil
}

// ping keeps the lease: a frame every interval until the channel ends.
func (c *Conn) ping(interval time.Duration) {
	defer c.readers.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			_ = c.send(keeperproto.ChanPing, 0, nil)
		}
	}
}

// fail breaks the channel once: every stream fails with err.
func (c *Conn) fail(err error) {
	c.breakMu.Do(func() {
		c.err = err
		close(c.done)
		_ = c.rw.Close()
		c.mu.Lock()
		streams := c.streams
		c.streams = map[uint32]*cstream{}
		c.mu.Unlock()
		for _, st := range streams {
			st.broken(err)
		}
	})
}

func (c *Conn) readLoop(nonce string, welcomed chan<- keeperproto.Welcome) {
	defer c.readers.Done()
	fr := keeperproto.NewFrameReader(c.rw)
	for {
		f, err := fr.Next()
		if err != nil {
			c.fail(fmt.Errorf("%w: %w", ErrBroken, err))
			return
		}
		gen := c.gen.Load()
		if gen == 0 {
			var w keeperproto.Welcome
			if f.Type == keeperproto.ChanWelcome && json.Unmarshal(f.Payload, &w) == nil && w.Nonce == nonce {
				c.welcome = w
				c.gen.Store(w.Generation)
				welcomed <- w
			}
			continue // frames for an older holder, before our welcome
		}
		switch {
		case f.Gen > gen:
			c.log.Info("keeper channel taken over by another holder", zap.Uint64("generation", gen), zap.Uint64("theirs", f.Gen))
			c.fail(ErrFenced)
			return
		case f.Gen < gen:
			continue // for an older holder, on a merged stream
		case f.Type == keeperproto.ChanFenced:
			c.fail(ErrFenced)
			return
		}
		c.mu.Lock()
		st := c.streams[f.Stream]
		c.mu.Unlock()
		if st != nil {
			st.deliver(f)
		}
	}
}

// send writes one frame of this Conn's generation; a failed write breaks
// the channel.
func (c *Conn) send(typ byte, stream uint32, payload []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.Err(); err != nil {
		return err
	}
	var err error
	c.wbuf, err = keeperproto.AppendFrame(c.wbuf[:0], keeperproto.Frame{Type: typ, Stream: stream, Gen: c.gen.Load(), Payload: payload})
	if err != nil {
		return err
	}
	if _, err := c.rw.Write(c.wbuf); err != nil {
		c.fail(fmt.Errorf("%w: %w", ErrBroken, err))
		return c.Err()
	}
	if cap(c.wbuf) > 4*keeperproto.MaxPayload {
		c.wbuf = nil
	}
	return nil
}

func (c *Conn) sendJSON(typ byte, stream uint32, v any) error {
	payload, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.send(typ, stream, payload)
}

// newStream registers a stream before its request goes out.
// ordered streams (detached execs) keep their output as one sequence of
// offset-tagged chunks.
func (c *Conn) newStream(ordered bool) (*cstream, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.Err(); err != nil {
		return nil, err
	}
	c.next++
	st := newCStream(c, c.next, ordered)
	c.streams[st.id] = st
	return st, nil
}

func (c *Conn) forget(st *cstream) {
	c.mu.Lock()
	if c.streams[st.id] == st {
		delete(c.streams, st.id)
	}
	c.mu.Unlock()
}
