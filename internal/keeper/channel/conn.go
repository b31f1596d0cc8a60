package channel

import (
	"context"
	"crypto/rand"
	"encoding/base64"
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

// DefaultWindow is the per-stream credit when Options.Window is 0: what
// a stream may hold in this process unread. 128 KiB, returned in halves
// (cstream.consumed), keeps a single stream as fast as 256 KiB in quarters
// did, and holds half as much per stream: 100 streams held 98-100 MB of
// the resident's peak RSS at 256 KiB and 75 MB at 128 KiB
// (docs/performance.md).
const DefaultWindow = 128 << 10

// A stream whose reader keeps up grows its window, doubling at a grant
// that finds everything received already read, up to DefaultMaxWindow;
// what the streams of one Conn hold above DefaultWindow is bounded by
// DefaultGrowBudget in all. Over a Docker attach stream the credit's
// round trip crosses the engine twice each way (the resident, dockerd,
// the shim, the keeper's stdin), and a fixed 128 KiB window capped one
// stream at about 128 KiB per round trip; many streams whose reader is
// behind never grow, so the resident's memory under many streams stays
// streams x DefaultWindow plus the budget (docs/performance.md, "The
// credit window grows").
const (
	DefaultMaxWindow  = 1 << 20
	DefaultGrowBudget = 4 << 20
)

// DefaultOutputBudget bounds what the output windows of all of a Conn's
// streams add up to once many are open: each stream's window is at most
// its share of it (never below two frames, minWindow). One stream, or a
// few, are unaffected (their windows are 128 KiB, growing to 1 MiB); 100
// streaming execs on one sandbox hold 64 KiB each, not 128 (and none
// grows): 6.4 MB that a host reading slower than they write keeps
// buffered in the resident, instead of 12.8 MB and the growth budget
// (docs/performance.md, "Exec output: fewer, larger reads").
const DefaultOutputBudget = 4 << 20

// minWindow is the smallest Options.Window a Conn grants: two frames (see
// Open).
const minWindow = 2 * keeperproto.MaxPayload

// Options configure a Conn.
type Options struct {
	// Logger gets the channel's own events (takeover, fence, resyncs);
	// nil for none.
	Logger *zap.Logger
	// Window is the credit, in bytes, this side grants each stream's
	// output: how much the keeper may send before the reader consumes it.
	// At least two frames (64 KiB): a smaller one is raised to that.
	Window int
	// MaxWindow is what a stream's window may grow to while its reader
	// keeps up; 0 is DefaultMaxWindow, and a MaxWindow at or below Window
	// keeps every window at Window.
	MaxWindow int
	// GrowBudget bounds the bytes of window all streams of the Conn hold
	// above Window together; 0 is DefaultGrowBudget.
	GrowBudget int
	// OutputBudget bounds the windows of all streams together once many
	// are open: a stream's window is at most OutputBudget divided by the
	// streams open, and never below two frames; 0 is DefaultOutputBudget.
	OutputBudget int
	// Lease is how long this holder may stay silent before the keeper
	// treats it as gone (kills its non-detached execs, refuses its frames):
	// the Conn pings three times within it. An attach stream never tells
	// the keeper its holder died; this does. 0 is DefaultLease; negative
	// asks for no lease (the transport's end is the only sign).
	Lease time.Duration
	// Seal asks the keeper to seal every frame it writes to this holder
	// (keeperproto.FeatureSeal) with a fresh key sent in the Hello: for a
	// transport whose keeper→resident direction is recorded (a pod's
	// stdout is the node's pod log) and whose other direction is not. Open
	// fails with ErrNotSealed when the keeper answers in plaintext; from
	// then on every frame of this generation that does not authenticate
	// (tampered, replayed, plaintext) is dropped and counted (Rejected).
	Seal bool
}

// DefaultLease is Options.Lease when 0.
const DefaultLease = 6 * time.Second

// Conn is one holder's channel to one keeper.
type Conn struct {
	rw     io.ReadWriteCloser
	log    *zap.Logger
	window int
	// maxWindow and growBudget bound the streams' growing windows; extra
	// is what they hold above window now.
	maxWindow  int
	growBudget int64
	extra      atomic.Int64
	// outputBudget is shared by the open streams (open counts them).
	outputBudget int
	open         atomic.Int64
	welcome      keeperproto.Welcome
	gen          atomic.Uint64
	// opener opens the keeper's sealed frames (Options.Seal), nil without
	// sealing; owned by the read loop.
	opener   *keeperproto.Opener
	rejected atomic.Int64

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
	// The keeper's stdout and stderr pumps each take up to a frame of a
	// stream's shared credit before they read, and a pump whose pipe is
	// quiet holds what it took: a window of less than two frames could be
	// held whole by stderr while stdout waits for credit that never comes
	// back (a 32 KiB window stalled 100 streaming execs for good).
	c.window = max(c.window, minWindow)
	c.maxWindow, c.growBudget = o.MaxWindow, int64(o.GrowBudget)
	if c.maxWindow == 0 {
		c.maxWindow = DefaultMaxWindow
	}
	if c.growBudget <= 0 {
		c.growBudget = DefaultGrowBudget
	}
	c.outputBudget = o.OutputBudget
	if c.outputBudget <= 0 {
		c.outputBudget = DefaultOutputBudget
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	hello := keeperproto.Hello{Version: keeperproto.ChanVersion, Nonce: hex.EncodeToString(nonce[:])}
	if o.Seal {
		// A new key for every Open: a reopen or a takeover never seals
		// under a key (and so a nonce) used before.
		key := make([]byte, keeperproto.SealKeySize)
		_, _ = rand.Read(key)
		opener, err := keeperproto.NewOpener(key)
		if err != nil {
			return nil, err
		}
		c.opener = opener
		hello.SealKey = base64.StdEncoding.EncodeToString(key)
	}
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

// Sealed reports whether the keeper seals what it writes to this Conn.
func (c *Conn) Sealed() bool { return c.opener != nil }

// Rejected counts the frames of this Conn's generation it dropped because
// they did not authenticate (a sealed Conn only): tampered, replayed, or
// plaintext where the keeper seals.
func (c *Conn) Rejected() int64 { return c.rejected.Load() }

// Generation is the lease generation this Conn holds.
func (c *Conn) Generation() uint64 { return c.gen.Load() }

// Protected reports whether the keeper runs protected (its own uid,
// non-dumpable, execs marked); false when it was not started as root.
func (c *Conn) Protected() bool { return c.welcome.Protected }

// Env is the keeper's environment as it started (Welcome.Env): the
// container's, which an engine exec would have inherited; nil when the
// keeper did not tell it.
func (c *Conn) Env() []string { return slices.Clone(c.welcome.Env) }

// Cwd is the keeper's working directory as it started (Welcome.Cwd),
// where an exec without a cwd starts; "" when the keeper did not tell it.
func (c *Conn) Cwd() string { return c.welcome.Cwd }

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
		c.open.Store(0)
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
			sealed := false
			if c.opener != nil && f.Type == keeperproto.ChanSealed {
				inner, err := c.opener.Open(f)
				if err != nil {
					continue // for another holder (another key), or forged
				}
				f, sealed = inner, true
			}
			var w keeperproto.Welcome
			if f.Type == keeperproto.ChanWelcome && json.Unmarshal(f.Payload, &w) == nil && w.Nonce == nonce {
				// Our nonce went only to the keeper: a plaintext answer
				// is a keeper that does not seal.
				if c.opener != nil && (!sealed || f.Gen != w.Generation) {
					c.fail(fmt.Errorf("%w: %w", ErrBroken, ErrNotSealed))
					return
				}
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
		case c.opener != nil:
			inner, err := c.opener.Open(f)
			if err != nil {
				n := c.rejected.Add(1)
				c.log.Warn("keeper channel: frame refused", zap.Error(err), zap.Int64("refused", n))
				keeperproto.ReleasePayload(f.Payload)
				continue
			}
			f = inner
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
		return notSentError{err}
	}
	var err error
	c.wbuf, err = keeperproto.AppendFrame(c.wbuf[:0], keeperproto.Frame{Type: typ, Stream: stream, Gen: c.gen.Load(), Payload: payload})
	if err != nil {
		return err
	}
	if n, err := c.rw.Write(c.wbuf); err != nil {
		c.fail(fmt.Errorf("%w: %w", ErrBroken, err))
		if n == 0 {
			return notSentError{c.Err()}
		}
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
		return nil, notSentError{err}
	}
	c.next++
	st := newCStream(c, c.next, ordered)
	c.streams[st.id] = st
	c.open.Add(1)
	return st, nil
}

func (c *Conn) forget(st *cstream) {
	c.mu.Lock()
	if c.streams[st.id] == st {
		delete(c.streams, st.id)
		c.open.Add(-1)
	}
	c.mu.Unlock()
}

// share is the most window a stream of win may be granted now: its part
// of the output budget among the streams open, never below two frames.
func (c *Conn) share(win int) int {
	n := max(c.open.Load(), 1)
	return min(win, max(minWindow, int(int64(c.outputBudget)/n)))
}
