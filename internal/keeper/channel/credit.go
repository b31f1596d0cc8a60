package channel

import "sync"

// credit is how many bytes of input the keeper will still take on a
// stream (it grants more as the command consumes them): a Write waits for
// it, so a command that stops reading its stdin stalls that writer only.
type credit struct {
	mu     sync.Mutex
	cond   *sync.Cond
	n      int
	closed bool
}

func newCredit(n int) *credit {
	c := &credit{n: n}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// take waits for credit and takes up to max; 0 once closed.
func (c *credit) take(max int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.n <= 0 && !c.closed {
		c.cond.Wait()
	}
	if c.closed {
		return 0
	}
	n := min(c.n, max)
	c.n -= n
	return n
}

func (c *credit) grant(n int) {
	c.mu.Lock()
	c.n += n
	c.mu.Unlock()
	c.cond.Broadcast()
}

func (c *credit) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cond.Broadcast()
}
