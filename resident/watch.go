package resident

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
)

// DefaultWatchInterval is how often a watched session lists its owned
// sandboxes to find what another host on the same install changed (or a
// lifetime ended): the latency of those changes. What this session does
// itself is sent at once.
const DefaultWatchInterval = 2 * time.Second

// watcher is sandbox/watch: off until the host asks, then every create,
// terminate and exec of this session is sent as it happens, and a list of
// the owned sandboxes every interval finds the rest. It lists nothing
// while nobody watches.
type watcher struct {
	s *session

	mu    sync.Mutex
	on    bool
	known map[string]string // sandbox id -> the state last sent
}

func newWatcher(s *session) *watcher { return &watcher{s: s, known: map[string]string{}} }

// watchSandboxes starts the feed and answers with the owned sandboxes as
// they are now, the state the notifications that follow change.
func watchSandboxes(ctx context.Context, s *session, c *call, _ *struct{}) (*protocol.ListOwnedResult, error) {
	owned, err := listOwned(ctx, s, c, nil)
	if err != nil {
		return nil, err
	}
	w := s.watch
	w.mu.Lock()
	started := w.on
	w.on = true
	for _, b := range owned.Sandboxes {
		w.known[b.SandboxID] = b.State
	}
	w.mu.Unlock()
	if !started {
		s.handlers.Add(1)
		go w.poll()
	}
	return owned, nil
}

func (w *watcher) poll() {
	defer w.s.handlers.Done()
	ticker := time.NewTicker(w.s.opts.WatchInterval)
	defer ticker.Stop()
	for {
		select {
		case <-w.s.base.Done():
			return
		case <-ticker.C:
		}
		ctx, cancel := context.WithTimeout(w.s.base, w.s.opts.WatchInterval*4)
		owned, err := listOwned(ctx, w.s, nil, nil)
		cancel()
		if err != nil {
			w.s.log.Debug("watch: listing owned sandboxes failed; retried next interval", zap.Error(err))
			continue
		}
		w.send(w.diff(owned.Sandboxes))
	}
}

// diff updates what was sent to the list and returns the events that say so.
func (w *watcher) diff(boxes []protocol.Sandbox) []protocol.WatchEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	var events []protocol.WatchEvent
	seen := make(map[string]bool, len(boxes))
	for _, b := range boxes {
		seen[b.SandboxID] = true
		switch last, ok := w.known[b.SandboxID]; {
		case !ok:
			events = append(events, protocol.WatchEvent{Event: protocol.WatchCreated, SandboxID: b.SandboxID, State: b.State})
		case last != b.State:
			events = append(events, protocol.WatchEvent{Event: protocol.WatchState, SandboxID: b.SandboxID, State: b.State})
		}
		w.known[b.SandboxID] = b.State
	}
	for id := range w.known {
		if !seen[id] {
			delete(w.known, id)
			events = append(events, protocol.WatchEvent{Event: protocol.WatchTerminated, SandboxID: id})
		}
	}
	return events
}

// sandbox reports a change this session made.
func (w *watcher) sandbox(event, id, state string) {
	w.mu.Lock()
	if !w.on {
		w.mu.Unlock()
		return
	}
	if event == protocol.WatchTerminated {
		delete(w.known, id)
	} else {
		w.known[id] = state
	}
	w.mu.Unlock()
	w.send([]protocol.WatchEvent{{Event: event, SandboxID: id, State: state}})
}

func (w *watcher) execStarted(sandboxID, execID string) {
	w.execEvent(protocol.WatchEvent{Event: protocol.WatchExecStart, SandboxID: sandboxID, ExecID: execID})
}

func (w *watcher) execEnded(sandboxID, execID string, code int) {
	w.execEvent(protocol.WatchEvent{Event: protocol.WatchExecEnd, SandboxID: sandboxID, ExecID: execID, ExitCode: &code})
}

func (w *watcher) execEvent(e protocol.WatchEvent) {
	w.mu.Lock()
	on := w.on
	w.mu.Unlock()
	if on {
		w.send([]protocol.WatchEvent{e})
	}
}

// send writes outside the lock: a host slow to read must not stall the
// execs that report to the watcher.
func (w *watcher) send(events []protocol.WatchEvent) {
	for _, e := range events {
		w.s.notifyText(protocol.NotifyWatchEvent, e)
	}
}
