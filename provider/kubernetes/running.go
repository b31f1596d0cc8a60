package kubernetes

import "sync"

// runningExecs are this provider's execs still running, by sandbox. An
// exclusive exec kills every other process of its sandbox inside the
// keeper, where a victim's keeper sees only a SIGKILL; this is how a
// victim started by this resident learns to answer killed.
type runningExecs struct {
	mu  sync.Mutex
	set map[string]map[*process]struct{}
}

func (r *runningExecs) add(pr *process) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.set == nil {
		r.set = map[string]map[*process]struct{}{}
	}
	if r.set[pr.sandbox] == nil {
		r.set[pr.sandbox] = map[*process]struct{}{}
	}
	r.set[pr.sandbox][pr] = struct{}{}
}

func (r *runningExecs) remove(pr *process) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.set[pr.sandbox], pr)
	if len(r.set[pr.sandbox]) == 0 {
		delete(r.set, pr.sandbox)
	}
}

// evict marks every running exec of sandbox as about to be killed by an
// exclusive exec, and returns an undo for an exclusive start that failed.
func (r *runningExecs) evict(sandbox string) (undo func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var marked []*process
	for pr := range r.set[sandbox] {
		if !pr.evicted.Swap(true) {
			marked = append(marked, pr)
		}
	}
	return func() {
		for _, pr := range marked {
			pr.evicted.Store(false)
		}
	}
}
