package resident

import (
	"context"
	"sync"

	"github.com/resident-dev/resident/protocol"
)

// hostBudget bounds the bytes the resident holds on the host's behalf: every
// frame from the moment its header is read, and then whatever of the
// decoded request its handler keeps (stdin data, a file's contents, an
// exec's argv and env) until the handler returns. It is one global bound,
// not a per-request one multiplied by the number of requests.
//
// The reader waits for room before it reads a body (backpressure: the host's
// writes then block). That wait must always end without the host's help,
// or a kill that would free the room could never be read. So the holds that
// can last as long as a process likes (an exec, stdin for a process that is
// not reading) share only waitLimit, the budget less one largest frame;
// past it they are refused, not queued. Everything else that holds budget
// either is the frame being read or ends within its own time bound.
type hostBudget struct {
	limit     int64
	waitLimit int64

	mu      sync.Mutex
	held    int64
	waiting int64
	freed   chan struct{} // closed and replaced whenever bytes are released
}

// requestOverhead is charged for every request while it is in flight, on top
// of nothing (it is a minimum, not an addition): its goroutine, context and
// call. Without it a stream of tiny requests queued behind a process that
// never reads would grow without bound while holding no bytes.
const requestOverhead = 4 << 10

func newHostBudget(limit, largestFrame int64) *hostBudget {
	return &hostBudget{limit: limit, waitLimit: limit - largestFrame, freed: make(chan struct{})}
}

// hold is one request's share of the budget. Its methods are safe on a nil
// hold (no budget), and release is idempotent.
type hold struct {
	b       *hostBudget
	n       int64
	waiting bool
}

// acquire takes n bytes, waiting while the budget has no room for them. It
// fails only when ctx ends.
func (b *hostBudget) acquire(ctx context.Context, n int64) (*hold, error) {
	if b == nil {
		return nil, nil
	}
	for {
		b.mu.Lock()
		if b.held+n <= b.limit || b.held == 0 {
			b.held += n
			b.mu.Unlock()
			return &hold{b: b, n: n}, nil
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// keep shrinks the hold to the n bytes its handler keeps once the request is
// decoded (n is at most what is held). waits says the handler may keep them
// for as long as a process chooses; such holds share waitLimit, and when it
// has no room keep releases everything and reports false.
func (h *hold) keep(n int64, waits bool) bool {
	if h == nil {
		return true
	}
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	n = min(n, h.n)
	if waits && b.waiting+n > b.waitLimit {
		b.releaseLocked(h.n)
		h.n = 0
		return false
	}
	b.releaseLocked(h.n - n)
	h.n = n
	if waits {
		b.waiting += n
		h.waiting = true
	}
	return true
}

// settle is for a handler done with its params: the hold keeps only the
// request's overhead, outside the waiting share, until its answer is
// written. A host that reads its answers thus finds the bytes free when an
// answer arrives, and one that stops reading them stops the resident
// reading its requests once their overheads fill the budget.
func (h *hold) settle() { h.shrinkTo(requestOverhead) }

// release gives the hold back.
func (h *hold) release() { h.shrinkTo(0) }

// shrinkTo leaves the waiting share and keeps at most keep bytes.
func (h *hold) shrinkTo(keep int64) {
	if h == nil {
		return
	}
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if h.waiting {
		b.waiting -= h.n
		h.waiting = false
	}
	keep = min(h.n, keep)
	b.releaseLocked(h.n - keep)
	h.n = keep
}

func (b *hostBudget) releaseLocked(n int64) {
	if n == 0 {
		return
	}
	b.held -= n
	close(b.freed)
	b.freed = make(chan struct{})
}

// usage reports the bytes held and, of them, those held by waiting requests.
func (b *hostBudget) usage() (held, waiting int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held, b.waiting
}

// keepOrRefuse runs on the read loop with s.mu held, once c is decoded: it
// shrinks c's hold to what its handler keeps, or refuses c when that would
// wait on a process and the waiting share is full. Stdin refused for an exec
// refuses all its later stdin too, so its process never reads a stream with
// a gap in it.
func (*session) keepOrRefuse(c *call, m method, known bool) {
	if !known || c.decodeErr != nil || m.kept == nil {
		c.hold.keep(requestOverhead, false)
		return
	}
	if c.method == protocol.MethodExecStdin && c.target != nil && c.target.stdinRefused.Load() {
		c.hold.keep(requestOverhead, false)
		c.params = nil
		c.refused = protocol.Errorf(protocol.KindConflict, "exec %q refused earlier stdin, so it takes no more: its process would see a gap", c.route.ExecID)
		return
	}
	n, waits := m.kept(c.params)
	n = max(n, requestOverhead)
	if c.hold.keep(n, waits) {
		return
	}
	c.params = nil // keep released the hold: a refusal holds nothing
	_, waiting := c.hold.b.usage()
	limit := c.hold.b.waitLimit
	if c.method == protocol.MethodExecStdin {
		if c.target != nil {
			c.target.stdinRefused.Store(true)
		}
		c.refused = protocol.Errorf(protocol.KindQuota, "exec/stdin refused: %d bytes already wait on processes (execs and stdin not yet read), and %d more would pass the %d byte limit; exec %q takes no more stdin", waiting, n, limit, c.route.ExecID)
		return
	}
	c.refused = protocol.Errorf(protocol.KindQuota, "%s refused: %d bytes already wait on processes (execs and stdin not yet read), and %d more would pass the %d byte limit; retry when an exec ends", c.method, waiting, n, limit)
}
