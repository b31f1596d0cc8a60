package hardening

// Stream scrubs a byte stream that arrives in arbitrary pieces. Its output,
// concatenated, equals Scrub of the concatenated input whatever the split,
// as long as no secret is added meanwhile. A Stream is used by one goroutine;
// the Scrubber behind it may be shared.
//
// Write emits at once everything that no later byte can change and holds
// back only the shortest tail that could still become (part of) a match: from
// the earliest position where a proper prefix of a registered form, a token
// prefix, or a token hit still short of its MaxLen ends the data. A mask is
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
	sc      scratch
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
	if len(p) == 0 {
		return 0, nil
	}
	if len(st.pending) == 0 {
		// Common case: nothing held back, scan the caller's bytes in
		// place and copy only the (short) tail that must wait.
		return len(p), st.writeInPlace(p)
	}
	lp := len(st.pending)
	seam := st.s.cur.Load().need + 1
	if len(p) <= 2*seam {
		st.pending = append(st.pending, p...)
		cut := st.process(st.pending, false)
		st.pending = st.pending[:copy(st.pending, st.pending[cut:])]
		return len(p), st.err
	}
	// A large write after held-back bytes: settle the held-back bytes with
	// just enough of p to decide them, then go on in place in p, rather
	// than copying all of p behind them.
	st.pending = append(st.pending, p[:seam]...)
	cut := st.process(st.pending, false)
	if st.err != nil {
		return len(p), st.err
	}
	if cut < lp {
		// Only if a longer secret was added meanwhile: fall back to
		// copying.
		st.pending = append(st.pending[:copy(st.pending, st.pending[cut:])], p[seam:]...)
		cut = st.process(st.pending, false)
		st.pending = st.pending[:copy(st.pending, st.pending[cut:])]
		return len(p), st.err
	}
	st.pending = st.pending[:0]
	return len(p), st.writeInPlace(p[cut-lp:])
}

// writeInPlace processes p with nothing held back and keeps its undecided
// tail.
func (st *Stream) writeInPlace(p []byte) error {
	cut := st.process(p, false)
	st.pending = append(st.pending[:0], p[cut:]...)
	return st.err
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

// process emits the part of data that is settled and returns its length.
func (st *Stream) process(data []byte, final bool) int {
	m := st.s.cur.Load()
	cut, spans, open := len(data), []span(nil), 0
	if m.lit != nil || m.tok != nil || st.carry > 0 {
		spans, cut, open = m.find(data, final, st.carry, &st.sc)
	}
	chunk := data[:cut]
	if len(spans) > 0 {
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
