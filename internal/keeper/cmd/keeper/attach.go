package main

import (
	"sort"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// attach opens a stream on a detached exec: Attached says where the replay
// starts, then the ring from there, live output, and the exit.
func (s *server) attach(l link, req keeperproto.Attach) stream {
	ex, ok := s.execs[req.ExecID] // under s.mu (open)
	if !ok || ex.ring == nil {
		go l.fail(keeperproto.KindNotFound, "", "no detached exec "+req.ExecID)
		return nil
	}
	st := newExecStream(l, req.Window)
	go func() {
		start, end, _, dropped := ex.ring.state()
		info := keeperproto.Attached{ExecID: ex.id, Offset: max(req.Offset, start), End: end, Buffer: ex.ring.size, Dropped: dropped,
			Stdin: ex.stdin != nil}
		if info.Offset > end {
			info.Offset = end
		}
		select {
		case <-ex.done:
			exit := ex.exit
			info.Exit = &exit
		default:
			info.Running = true
		}
		_ = l.sendJSON(keeperproto.ChanAttached, info)
		st.bind(ex)
		st.follow(info.Offset)
	}()
	return st
}

// listExecs describes every detached exec, oldest first.
func (s *server) listExecs() []keeperproto.ExecInfo {
	s.mu.Lock()
	var execs []*execState
	for _, ex := range s.execs {
		if ex.ring != nil {
			execs = append(execs, ex)
		}
	}
	s.mu.Unlock()
	sort.Slice(execs, func(i, j int) bool { return execs[i].started.Before(execs[j].started) })
	out := []keeperproto.ExecInfo{}
	for _, ex := range execs {
		_, end, kept, dropped := ex.ring.state()
		info := keeperproto.ExecInfo{ExecID: ex.id, Argv: ex.argv, StartedNS: ex.started.UnixNano(), End: end, Buffered: kept, Buffer: ex.ring.size, Dropped: dropped}
		select {
		case <-ex.done:
			exit := ex.exit
			info.Exit = &exit
		default:
			info.Running = true
		}
		out = append(out, info)
	}
	return out
}
