package main

import (
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
	self      string   // the keeper's own binary, for the helpers
	env       []string // the keeper's environment at start, told in Welcome
	cwd       string   // its working directory at start, told in Welcome
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
	// ended are the ids of ended detached execs still kept, oldest first.
	ended []string
	// issued are the marks this keeper gave its execs: what an exclusive
	// sweep may kill when the keeper is not pid 1 of a namespace of its
	// own (sweepable); nil as a sandbox's init, which needs no record.
	issued map[uint32]bool
}

// stream is one request's state on the holder's channel: it takes the
// frames sent on it, and is ended when the holder goes (takeover or a
// broken transport).
type stream interface {
	input(f keeperproto.Frame)
	end()
}

func newServer(id identity, protected bool, self string) *server {
	s := &server{id: id, protected: protected, self: self, reaper: newReaper(), streams: map[uint32]stream{}, execs: map[string]*execState{}, reserved: map[string]bool{}}
	if os.Getpid() != 1 {
		s.issued = map[uint32]bool{}
	}
	return s
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
		keeperproto.ChanWriteFile, keeperproto.ChanReadFile, keeperproto.ChanListDir, keeperproto.ChanDial, keeperproto.ChanShutdown:
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
	case keeperproto.ChanDial:
		var req keeperproto.Dial
		if !l.decode(f.Payload, &req) {
			return nil
		}
		return s.dial(l, req)
	case keeperproto.ChanShutdown:
		go s.shutdown(l)
		return nil
	}
	return nil
}

// closeStream forgets a finished stream, if it is still the holder's.
func (s *server) closeStream(l link, st stream) {
	s.mu.Lock()
	if s.gen == l.gen && s.streams[l.id] == st {
		delete(s.streams, l.id)
	}
	s.mu.Unlock()
}
