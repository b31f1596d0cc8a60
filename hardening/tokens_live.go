package hardening

import (
	"regexp/syntax"
	"unicode/utf8"
)

// A token rule at a prefix hit is decided once no byte that may follow can
// change what its regex matches there. MaxLen bytes after the hit always
// decide it, but waiting for them would make a stream hold MaxLen bytes
// behind every hit: 16 KiB for a Docker config pattern, behind every `"auth"`
// in ordinary JSON. Most hits are decided a few bytes later, where the
// token's character class ends, so the stream asks the regex's automaton
// whether any of its threads can still go on; once none can, the bytes
// seen decide the match and the rest is let through.

// liveProg is a rule's anchored regex as an automaton whose threads are
// stepped all together, without the priorities of leftmost-first matching:
// it only answers whether some thread is still alive, which is a superset
// of what the priorities could keep alive, so "dead" is always safe.
type liveProg struct {
	prog *syntax.Prog
}

// compileLive compiles expr exactly as package regexp does (Perl syntax,
// simplified), so the automaton is the one regexp runs.
func compileLive(expr string) liveProg {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		panic(err) // regexp.MustCompile accepted the same expression
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		panic(err)
	}
	return liveProg{prog: prog}
}

// liveScratch is the thread sets of one simulation, reused between calls.
type liveScratch struct {
	cur, next threadSet
	stack     []uint32
}

// undecided reports whether bytes after rest could change what the regex
// matches at the start of rest. rest is not the end of the text. A thread
// is alive when it waits for a rune that rest does not hold whole, or for
// an empty-width assertion that needs that rune.
func (lp liveProg) undecided(rest []byte, sc *liveScratch) bool {
	insts := lp.prog.Inst
	cur, next := &sc.cur, &sc.next
	cur.reset(len(insts))
	next.reset(len(insts))
	pos := 0
	r, w, whole := peekRune(rest, pos)
	if sc.follow(insts, cur, uint32(lp.prog.Start), -1, r, whole) {
		return true
	}
	for len(cur.dense) > 0 {
		if !whole {
			return cur.waitsForRune(insts)
		}
		next.reset(len(insts))
		nr, nw, nwhole := peekRune(rest, pos+w)
		for _, pc := range cur.dense {
			if in := &insts[pc]; consumes(in, r) && sc.follow(insts, next, in.Out, r, nr, nwhole) {
				return true
			}
		}
		cur, next = next, cur
		pos += w
		r, w, whole = nr, nw, nwhole
	}
	return false
}

// peekRune decodes the rune at pos as regexp does. whole is false when the
// bytes at pos are the start of a rune that later bytes may complete (or
// there are none): its decoding, and any assertion on it, is not known yet.
func peekRune(b []byte, pos int) (r rune, w int, whole bool) {
	if pos >= len(b) || !utf8.FullRune(b[pos:]) {
		return 0, 0, false
	}
	if c := b[pos]; c < utf8.RuneSelf {
		return rune(c), 1, true
	}
	r, w = utf8.DecodeRune(b[pos:])
	return r, w, true
}

// follow adds pc and every instruction reachable from it without consuming
// a rune to set. prev and r (when whole) are the runes around the position.
// It returns true when an assertion there needs a rune not seen yet.
func (sc *liveScratch) follow(insts []syntax.Inst, set *threadSet, pc uint32, prev, r rune, whole bool) bool {
	stack := append(sc.stack[:0], pc)
	defer func() { sc.stack = stack[:0] }()
	var ctx syntax.EmptyOp
	if whole {
		ctx = syntax.EmptyOpContext(prev, r)
	}
	for len(stack) > 0 {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if set.has(pc) {
			continue
		}
		set.add(pc)
		in := &insts[pc]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			stack = append(stack, in.Arg, in.Out)
		case syntax.InstNop, syntax.InstCapture:
			stack = append(stack, in.Out)
		case syntax.InstEmptyWidth:
			if !whole {
				return true
			}
			if syntax.EmptyOp(in.Arg)&^ctx == 0 {
				stack = append(stack, in.Out)
			}
		}
	}
	return false
}

// consumes reports whether a rune instruction accepts r.
func consumes(in *syntax.Inst, r rune) bool {
	switch in.Op {
	case syntax.InstRune1:
		return r == in.Rune[0]
	case syntax.InstRune:
		return in.MatchRune(r)
	case syntax.InstRuneAny:
		return true
	case syntax.InstRuneAnyNotNL:
		return r != '\n'
	}
	return false
}

// threadSet is a sparse set of instruction indexes: cleared in O(1), in
// insertion order.
type threadSet struct {
	sparse []uint32
	dense  []uint32
}

func (s *threadSet) reset(n int) {
	if len(s.sparse) < n {
		s.sparse = make([]uint32, n)
	}
	s.dense = s.dense[:0]
}

func (s *threadSet) has(pc uint32) bool {
	i := s.sparse[pc]
	return int(i) < len(s.dense) && s.dense[i] == pc
}

func (s *threadSet) add(pc uint32) {
	s.sparse[pc] = uint32(len(s.dense))
	s.dense = append(s.dense, pc)
}

// waitsForRune reports whether some thread in s still needs a rune.
func (s *threadSet) waitsForRune(insts []syntax.Inst) bool {
	for _, pc := range s.dense {
		switch insts[pc].Op {
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			return true
		}
	}
	return false
}
