package main

import (
	"encoding/binary"
	"sync"
	"syscall"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// execStream is an exec's stream on the holder's channel: the one that
// started it, or an Attach to a detached one. It takes the stream's input
// (credit, stdin, signals, resize, kill, release) and, once bound to its
// exec, sends the output.
type execStream struct {
	l   link
	out *credit // the client's output credit

	mu      sync.Mutex
	ex      *execState
	pending []keeperproto.Frame // input that came before the exec started
	ended   bool
}

func newExecStream(l link, window int) *execStream {
	if window <= 0 || window > 16<<20 {
		window = 256 << 10
	}
	return &execStream{l: l, out: newCredit(window)}
}

func (st *execStream) input(f keeperproto.Frame) {
	if f.Type == keeperproto.ChanCredit {
		st.out.grant(creditFrom(f.Payload))
		return
	}
	st.mu.Lock()
	ex := st.ex
	if ex == nil {
		if len(st.pending) < 1024 {
			st.pending = append(st.pending, f)
		}
		st.mu.Unlock()
		return
	}
	st.mu.Unlock()
	st.apply(ex, f)
}

func (st *execStream) apply(ex *execState, f keeperproto.Frame) {
	switch f.Type {
	case keeperproto.ChanStdin:
		if ex.stdin != nil {
			ex.stdin.push(st.l, f.Payload)
		}
	case keeperproto.ChanStdinEOF:
		if ex.stdin != nil && ex.tty == nil {
			ex.stdin.closeInput()
		}
	case keeperproto.ChanSignal:
		if sig, ok := parseSignal(string(f.Payload)); ok {
			select {
			case <-ex.done:
			default:
				_ = syscall.Kill(ex.pid, sig)
			}
		}
	case keeperproto.ChanResize:
		if ex.tty != nil && len(f.Payload) == 4 {
			_ = setWinsize(ex.tty, keeperproto.WindowSize{Rows: binary.BigEndian.Uint16(f.Payload), Cols: binary.BigEndian.Uint16(f.Payload[2:])})
		}
	case keeperproto.ChanKill:
		go ex.kill()
	case keeperproto.ChanRelease:
		st.l.s.closeStream(st.l, st)
		st.end()
	}
}

// bind attaches the started exec and applies the input that waited for it.
func (st *execStream) bind(ex *execState) {
	st.mu.Lock()
	st.ex = ex
	pending, ended := st.pending, st.ended
	st.pending = nil
	st.mu.Unlock()
	for _, f := range pending {
		st.apply(ex, f)
	}
	if ended {
		st.end()
	}
}

// end: the holder went (or released the stream). A non-detached exec dies
// with its stream; a detached one goes on.
func (st *execStream) end() {
	st.mu.Lock()
	st.ended = true
	ex := st.ex
	st.mu.Unlock()
	st.out.close()
	if ex == nil {
		return
	}
	if ex.ring != nil {
		ex.ring.wake()
	} else {
		go ex.kill()
	}
}

func (st *execStream) isEnded() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.ended
}

// pumpTo streams a non-detached exec's output to st, then its exit.
func (ex *execState) pumpTo(st *execStream) {
	ex.pumpAll(streamSink{st})
	<-ex.done
	if !st.isEnded() {
		_ = st.l.sendJSON(keeperproto.ChanExit, ex.exit)
	}
	st.l.s.closeStream(st.l, st)
}

// streamSink sends output as frames, within the client's credit.
type streamSink struct{ st *execStream }

func (s streamSink) room() int { return s.st.out.take(keeperproto.MaxPayload) }
func (s streamSink) put(typ byte, data []byte) {
	_ = s.st.l.send(typ, data)
}
func (s streamSink) unused(n int) { s.st.out.giveBack(n) }

// ringSink keeps a detached exec's output.
type ringSink struct{ r *ring }

func (s ringSink) room() int                 { return keeperproto.MaxPayload }
func (s ringSink) put(typ byte, data []byte) { s.r.write(typ, data) }
func (s ringSink) unused(int)                {}

// follow streams a detached exec's ring from offset, live, then its exit.
func (st *execStream) follow(offset int64) {
	ex := st.ex
	cursor := offset
	for {
		n := st.out.take(keeperproto.MaxPayload)
		if n == 0 {
			return // ended
		}
		typ, data, next, finished := ex.ring.read(cursor, n, st.isEnded)
		st.out.giveBack(n - len(data))
		if len(data) > 0 {
			if from := next - int64(len(data)); from != cursor {
				// The ring let go of what this reader had not read yet: say
				// where the output resumes, so its offsets stay true.
				_ = st.l.send(keeperproto.ChanOffset, binary.BigEndian.AppendUint64(nil, uint64(from)))
			}
			_ = st.l.send(typ, data)
			cursor = next
			continue
		}
		if st.isEnded() {
			return
		}
		if finished {
			<-ex.done
			_ = st.l.sendJSON(keeperproto.ChanExit, ex.exit)
			st.l.s.closeStream(st.l, st)
			return
		}
	}
}
