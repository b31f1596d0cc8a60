package hardening

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// Mask replaces every registered secret, encoding and token match. It holds
// no quote or backslash, so it can be spliced into JSON string text.
const Mask = "[REDACTED]"

// MinSecretLen is the shortest value AddSecret registers, and the shortest
// derived form kept. Shorter values would mask ordinary words.
const MinSecretLen = 6

// Scrubber masks registered secrets and token patterns. It is safe for
// concurrent use; secrets and patterns can be added at any time. Readers
// never lock: every addition builds a new immutable matcher and publishes it
// atomically, so additions cost O(all forms) and are meant to be rare
// compared with scrubbing. Create one with New.
type Scrubber struct {
	mu       sync.Mutex // serialises additions
	cur      atomic.Pointer[matcher]
	seen     map[string]struct{}
	forms    [][]byte
	patterns []TokenPattern
}

// New returns a Scrubber masking the given token patterns and, until
// AddSecret is called, no literal secrets. It panics on an invalid pattern,
// as regexp.MustCompile does: patterns are fixed by the program, not input.
func New(patterns ...TokenPattern) *Scrubber {
	s := &Scrubber{seen: make(map[string]struct{})}
	s.cur.Store(newMatcher(nil, nil))
	s.AddPatterns(patterns...)
	return s
}

// AddSecret registers value and its common encodings (see doc.go). It
// returns false, and registers nothing, when value is empty, whitespace-only
// or shorter than MinSecretLen once surrounding whitespace is trimmed.
func (s *Scrubber) AddSecret(value string) bool {
	return s.AddSecrets(value) == 1
}

// AddSecrets registers several values with a single matcher rebuild, which
// matters when a sandbox starts with hundreds of secrets. It returns the
// number of values that were registrable.
func (s *Scrubber) AddSecrets(values ...string) int {
	ok := 0
	var fresh []string
	for _, v := range values {
		f := formsOf(v)
		if f == nil {
			continue
		}
		ok++
		fresh = append(fresh, f...)
	}
	if len(fresh) == 0 {
		return ok
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	added := false
	for _, f := range fresh {
		if _, dup := s.seen[f]; !dup {
			s.seen[f] = struct{}{}
			s.forms = append(s.forms, []byte(f))
			added = true
		}
	}
	if added {
		old := s.cur.Load()
		// A fresh slice header: the old matcher keeps reading its own.
		s.cur.Store(newMatcher(buildLiteral(s.forms[:len(s.forms):len(s.forms)]), old.tok))
	}
	return ok
}

// AddPatterns registers token patterns. It panics on an invalid pattern.
func (s *Scrubber) AddPatterns(p ...TokenPattern) {
	if len(p) == 0 {
		return
	}
	for _, tp := range p {
		if err := tp.validate(); err != nil {
			panic(err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.patterns = append(s.patterns, p...)
	old := s.cur.Load()
	s.cur.Store(newMatcher(old.lit, buildTokens(s.patterns)))
}

// Len returns the number of registered literal forms (secrets times their
// encodings, duplicates counted once).
func (s *Scrubber) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.forms)
}

// Scrub returns b with every match masked. When nothing matches it returns b
// itself, so the common case allocates and copies nothing; otherwise it
// returns a new slice and leaves b untouched.
func (s *Scrubber) Scrub(b []byte) []byte {
	m := s.cur.Load()
	if m.lit == nil && m.tok == nil {
		return b
	}
	var sc scratch
	spans, _, _ := m.find(b, true, 0, &sc)
	if len(spans) == 0 {
		return b
	}
	return render(make([]byte, 0, len(b)+len(spans)*len(Mask)), b, spans, false)
}

// AppendScrub appends b, scrubbed, to dst and returns the extended slice.
// Unlike Scrub it always copies, but into a buffer the caller can reuse:
// allocating a fresh output per call costs more than scanning it.
func (s *Scrubber) AppendScrub(dst, b []byte) []byte {
	m := s.cur.Load()
	var sc scratch
	spans, _, _ := m.find(b, true, 0, &sc)
	return render(dst, b, spans, false)
}

// ScrubString is Scrub for strings; it returns str itself when nothing
// matches.
func (s *Scrubber) ScrubString(str string) string {
	// The scan only reads, so viewing the string's bytes without a copy is
	// safe, and Scrub copies before anything could be written.
	b := unsafe.Slice(unsafe.StringData(str), len(str))
	out := s.Scrub(b)
	if len(b) == 0 || &out[0] == &b[0] {
		return str
	}
	return string(out)
}
