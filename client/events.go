package client

import "sync"

// events runs the host's callbacks in arrival order on a goroutine of its
// own, so a callback may block or call the Client (Close it, say, on
// expiry) without stalling the read loop that delivers the Client's
// answers. The queue is unbounded; events are few and small.
type events struct {
	mu    sync.Mutex
	queue []func()
	wake  chan struct{}
}

func newEvents() *events { return &events{wake: make(chan struct{}, 1)} }

func (e *events) push(fn func()) {
	e.mu.Lock()
	e.queue = append(e.queue, fn)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// run delivers events until done is closed (no more can arrive) and the
// queue is empty.
func (e *events) run(done <-chan struct{}) {
	for {
		select {
		case <-e.wake:
			e.drain()
		case <-done:
			e.drain()
			return
		}
	}
}

func (e *events) drain() {
	for {
		e.mu.Lock()
		batch := e.queue
		e.queue = nil
		e.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		for _, fn := range batch {
			fn()
		}
	}
}
