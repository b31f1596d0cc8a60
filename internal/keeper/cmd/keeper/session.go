package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// server is the channel's state: who holds it (the peer and generation of
// the last Hello), that holder's streams, and the execs, which outlive
// streams when detached.
type server struct {
	id        identity // who the keeper was started as: an exec's default user
	protected bool
	self      string // the keeper's own binary, for the helpers
	reaper    *reaper
	// lastSeen is when the holder last sent a frame (unix ns), for its lease.
	lastSeen atomic.Int64

	mu      sync.Mutex
	gen     uint64
	holder  *peer
	streams map[uint32]stream
	execs   map[string]*execState // running, and detached ones that ended
	// reserved are ids of execs being started, so two starts cannot take
	// one id.
	reserved map[string]bool
}

// stream is one request's state on the holder's channel: it takes the
// frames sent on it, and is ended when the holder goes (takeover or a
// broken transport).
type stream interface {
	input(f keeperproto.Frame)
	end()
}

func newServer(id identity, protected bool, self string) *server {
	return &server{id: id, protected: protected, self: self, reaper: newReaper(), streams: map[uint32]stream{}, execs: map[string]*execState{}, reserved: map[string]bool{}}
}

// readFrom serves frames read from r, which came on p's transport, until r
// ends; then the streams it held end (if it still holds the channel).
func (s *server) readFrom(p *peer, r io.Reader) {
	fr := keeperproto.NewFrameReader(r)
	for {
		f, err := fr.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				fmt.Fprintln(os.Stderr, "keeper serve: channel:", err)
			}
			break
		}
		s.handle(p, f)
	}
	s.mu.Lock()
	var ended map[uint32]stream
	if s.holder == p {
		ended, s.streams, s.holder = s.streams, map[uint32]stream{}, nil
	}
	s.mu.Unlock()
	for _, st := range ended {
		st.end()
	}
}

func (s *server) handle(p *peer, f keeperproto.Frame) {
	if f.Type == keeperproto.ChanHello {
		s.takeover(p, f)
		return
	}
	s.mu.Lock()
	if f.Gen != s.gen || p != s.holder || s.holder == nil {
		cur := s.gen
		s.mu.Unlock()
		// The sender sees this on its own transport (on a merged stream,
		// the current holder ignores a frame of an older generation).
		_ = p.send(jsonFrame(keeperproto.ChanFenced, 0, f.Gen, keeperproto.Fenced{Generation: cur, Msg: "the channel was taken over"}))
		return
	}
	s.lastSeen.Store(time.Now().UnixNano())
	if f.Type == keeperproto.ChanPing {
		s.mu.Unlock()
		return
	}
	st, open := s.streams[f.Stream]
	l := link{s: s, p: p, gen: f.Gen, id: f.Stream}
	switch f.Type {
	case keeperproto.ChanExec, keeperproto.ChanAttach, keeperproto.ChanListExecs, keeperproto.ChanKillExec,
		keeperproto.ChanWriteFile, keeperproto.ChanReadFile, keeperproto.ChanListDir:
		if open || f.Stream == 0 {
			s.mu.Unlock()
			l.fail(keeperproto.KindInvalidRequest, "", fmt.Sprintf("stream %d is in use", f.Stream))
			return
		}
		st = s.open(l, f)
		if st != nil {
			s.streams[f.Stream] = st
		}
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	if open {
		st.input(f)
	}
}

// open starts the request of a new stream (under s.mu, so the stream is
// in place before any later frame of it is read); the work itself runs on
// its own goroutine.
func (s *server) open(l link, f keeperproto.Frame) stream {
	switch f.Type {
	case keeperproto.ChanExec:
		var req keeperproto.Exec
		if !l.decode(f.Payload, &req) {
			return nil
		}
		return s.startExec(l, req)
	case keeperproto.ChanAttach:
		var req keeperproto.Attach
		if !l.decode(f.Payload, &req) {
			return nil
		}
		return s.attach(l, req)
	case keeperproto.ChanKillExec:
		var req keeperproto.KillExec
		if !l.decode(f.Payload, &req) {
			return nil
		}
		ex, ok := s.execs[req.ExecID]
		go func() {
			if !ok {
				l.fail(keeperproto.KindNotFound, "", "no exec "+req.ExecID)
				return
			}
			ex.kill()
			l.result(keeperproto.Result{})
		}()
		return nil
	case keeperproto.ChanListExecs:
		go func() { l.result(keeperproto.Result{Execs: s.listExecs()}) }() // s.mu is held here
		return nil
	case keeperproto.ChanWriteFile:
		var req keeperproto.WriteFile
		if !l.decode(f.Payload, &req) {
			return nil
		}
		return s.writeFile(l, req)
	case keeperproto.ChanReadFile:
		var req keeperproto.ReadFile
		if !l.decode(f.Payload, &req) {
			return nil
		}
		return s.readFile(l, req)
	case keeperproto.ChanListDir:
		var req keeperproto.ListDir
		if !l.decode(f.Payload, &req) {
			return nil
		}
		go s.listDir(l, req)
		return nil
	}
	return nil
}

// takeover makes p the holder with a new generation. The previous
// holder's streams end: its non-detached execs are killed, detached ones
// go on without it.
func (s *server) takeover(p *peer, f keeperproto.Frame) {
	var hello keeperproto.Hello
	if err := json.Unmarshal(f.Payload, &hello); err != nil || hello.Version != keeperproto.ChanVersion {
		_ = p.send(jsonFrame(keeperproto.ChanFailure, 0, f.Gen, keeperproto.Failure{Kind: keeperproto.KindInvalidRequest, Msg: fmt.Sprintf("hello: version %d, this keeper speaks %d", hello.Version, keeperproto.ChanVersion)}))
		return
	}
	s.mu.Lock()
	s.gen++
	gen := s.gen
	old, ended := s.holder, s.streams
	s.holder, s.streams = p, map[uint32]stream{}
	s.lastSeen.Store(time.Now().UnixNano())
	s.mu.Unlock()
	if hello.LeaseMS > 0 {
		go s.watchLease(p, gen, time.Duration(hello.LeaseMS)*time.Millisecond)
	}
	for _, st := range ended {
		st.end()
	}
	if old != nil {
		_ = old.send(jsonFrame(keeperproto.ChanFenced, 0, gen-1, keeperproto.Fenced{Generation: gen, Msg: "the channel was taken over"}))
		if old != p {
			old.close()
		}
	}
	_ = p.send(jsonFrame(keeperproto.ChanWelcome, 0, gen, keeperproto.Welcome{
		Version:    keeperproto.ChanVersion,
		Nonce:      hello.Nonce,
		Generation: gen,
		Features: []string{keeperproto.FeatureExec, keeperproto.FeatureDetach, keeperproto.FeatureTTY,
			keeperproto.FeatureUser, keeperproto.FeatureFiles, keeperproto.FeatureOOMCount},
		Window:    inputWindow,
		Protected: s.protected,
	}))
}

// watchLease ends a holder that went silent for its whole lease: on an
// attach stream the keeper never sees the holder's transport end, so
// silence is how it learns the holder died. Its streams end as if the
// transport had (non-detached execs are killed) and its generation is
// refused from then on; a Hello takes the channel over again.
func (s *server) watchLease(p *peer, gen uint64, lease time.Duration) {
	for {
		time.Sleep(lease / 4)
		s.mu.Lock()
		if s.gen != gen || s.holder != p {
			s.mu.Unlock()
			return
		}
		if time.Since(time.Unix(0, s.lastSeen.Load())) < lease {
			s.mu.Unlock()
			continue
		}
		ended := s.streams
		s.streams, s.holder = map[uint32]stream{}, nil
		s.mu.Unlock()
		fmt.Fprintf(os.Stderr, "keeper serve: the holder of generation %d said nothing for %v: its execs end\n", gen, lease)
		for _, st := range ended {
			st.end()
		}
		return
	}
}

// closeStream forgets a finished stream, if it is still the holder's.
func (s *server) closeStream(l link, st stream) {
	s.mu.Lock()
	if s.gen == l.gen && s.streams[l.id] == st {
		delete(s.streams, l.id)
	}
	s.mu.Unlock()
}

// inputWindow is the credit the keeper grants each stream's input.
const inputWindow = 256 << 10

// link addresses one stream of one holder.
type link struct {
	s   *server
	p   *peer
	gen uint64
	id  uint32
}

func (l link) send(typ byte, payload []byte) error {
	return l.p.send(keeperproto.Frame{Type: typ, Stream: l.id, Gen: l.gen, Payload: payload})
}

func (l link) sendJSON(typ byte, v any) error {
	return l.p.send(jsonFrame(typ, l.id, l.gen, v))
}

func (l link) fail(kind, reason, msg string) {
	_ = l.sendJSON(keeperproto.ChanFailure, keeperproto.Failure{Kind: kind, Reason: reason, Msg: msg})
}

func (l link) result(r keeperproto.Result) { _ = l.sendJSON(keeperproto.ChanResult, r) }

func (l link) decode(payload []byte, v any) bool {
	if err := json.Unmarshal(payload, v); err != nil {
		l.fail(keeperproto.KindInvalidRequest, "", "bad request: "+err.Error())
		return false
	}
	return true
}

func jsonFrame(typ byte, stream uint32, gen uint64, v any) keeperproto.Frame {
	payload, _ := json.Marshal(v)
	return keeperproto.Frame{Type: typ, Stream: stream, Gen: gen, Payload: payload}
}

func newExecID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
