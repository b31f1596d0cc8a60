package hardening

// Stream scrubs a byte stream that arrives in arbitrary pieces. Its output,
// concatenated, equals Scrub of the concatenated input whatever the split,
// as long as no secret is added meanwhile. A Stream is used by one goroutine;
// the Scrubber behind it may be shared.
//
// Write emits at once everything that no later byte can change and holds
// back only the shortest tail that could still become (part of) a match: from
// the earliest position where a proper prefix of a registered form or of a
// token prefix ends the data, or where a token hit's regex could still go on
// (MaxLen bounds that, but a hit is usually decided where its token ends). A mask is
// emitted as soon as its start is known, even if overlapping matches may
// still extend it; the bytes it covers are then dropped as they settle, so a
// run of overlapping secrets costs no more memory than one. Each Write
// scans that tail again together with the new bytes, against the secret set
// current at that moment, so a secret added mid-stream is caught even when
// its first bytes were already waiting in the tail. Bytes emitted before the
// secret was added cannot be recalled: a secret must be registered before the
// process that knows it starts producing output.
type Stream struct {
	s       *Scrubber
	emit    func([]byte) error
	pending []byte // held-back raw bytes, never emitted yet
	carry   int    // leading pending bytes inside a Mask already emitted
	out     []byte // reused rendering buffer
	offset  int64  // stream offset of pending[0]: bytes settled so far
	sc      scratch
	masks   int64 // mask spans rendered so far
	err     error // first error from emit; the stream is dead after it
}

// Stream returns a streaming scrubber that passes scrubbed bytes to emit.
// emit must not retain the slice it is given after it returns. An error from
// emit is returned by that Write or Flush and by every later call.
func (s *Scrubber) Stream(emit func([]byte) error) *Stream {
	return &Stream{s: s, emit: emit}
}

// Write scrubs p, emitting zero or more times. It always consumes all of p
// (bytes not emitted are held back), so n is len(p) unless the stream had
// already failed.
func (st *Stream) Write(p []byte) (int, error) {
	if st.err != nil {
		return 0, st.err
	}
	n := len(p)
	// Held-back bytes are settled with as few of p's bytes as decide them,
	// so a write behind a few held-back bytes copies a few dozen bytes,
	// not the whole of p; the rest of p is scanned in place. The step
	// doubles while the held-back bytes stay undecided (a long token still
	// arriving), which keeps the rescanning linear.
	step := max(len(st.pending), settleStep)
	for len(st.pending) > 0 && len(p) > 0 {
		lp := len(st.pending)
		k := min(len(p), step)
		st.pending = append(st.pending, p[:k]...)
		cut := st.process(st.pending, false)
		if st.err != nil {
			return n, st.err
		}
		if cut >= lp && k < len(p) {
			// The held-back bytes are settled: go on in place from
			// the first unsettled byte of p.
			st.pending = st.pending[:0]
			p = p[cut-lp:]
			break
		}
		st.pending = st.pending[:copy(st.pending, st.pending[cut:])]
		p = p[k:]
		step *= 2
	}
	if len(p) > 0 {
		// Nothing held back: scan the caller's bytes in place and copy
		// only the tail that must wait.
		cut := st.process(p, false)
		st.pending = append(st.pending[:0], p[cut:]...)
	}
	st.release()
	return n, st.err
}

// settleStep is the first slice of a write used to settle held-back bytes:
// a partial prefix of a secret or token is usually decided by the next few
// bytes, and each byte taken here is scanned twice.
const settleStep = 64

// keepBytes bounds the buffers a Stream keeps between writes. A long token
// or a masked chunk may grow them; once that is over, they are let go, so
// that a hundred quiet streams do not each pin the largest chunk they saw.
const keepBytes = 4 << 10

// release drops buffers that grew past keepBytes and are mostly unused.
func (st *Stream) release() {
	if cap(st.pending) > keepBytes && len(st.pending) <= cap(st.pending)/4 {
		st.pending = append([]byte(nil), st.pending...)
	}
	if cap(st.out) > keepBytes {
		st.out = nil
	}
}

// Flush emits everything held back, scrubbed as the end of the stream. The
// Stream stays usable: later bytes start a fresh stream.
func (st *Stream) Flush() error {
	if st.err != nil {
		return st.err
	}
	if len(st.pending) > 0 {
		st.process(st.pending, true)
		st.pending = st.pending[:0]
	}
	st.carry = 0
	return st.err
}

// Buffered returns the number of bytes held back, for tests and metrics.
func (st *Stream) Buffered() int { return len(st.pending) }

// Masks counts the mask spans emitted so far (a mask that continues over
// several writes may count more than once). Zero means everything emitted
// is exactly what was written, so a caller need not hash both sides to know.
func (st *Stream) Masks() int64 { return st.masks }

// process emits the part of data that is settled and returns its length.
func (st *Stream) process(data []byte, final bool) int {
	m := st.s.cur.Load()
	cut, spans, open := len(data), []span(nil), 0
	if m.lit != nil || m.tok != nil || st.carry > 0 {
		st.sc.base = st.offset
		spans, cut, open = m.find(data, final, st.carry, &st.sc)
	}
	st.offset += int64(cut)
	chunk := data[:cut]
	if len(spans) > 0 {
		st.masks += int64(len(spans))
		st.out = render(st.out[:0], chunk, spans, st.carry > 0)
		chunk = st.out
	}
	st.carry = open
	if len(chunk) > 0 {
		if err := st.emit(chunk); err != nil {
			st.err = err
		}
	}
	return cut
}
