package main

import (
	"encoding/binary"
	"sync"
)

// credit is how many bytes one side may still send on a stream: the
// receiver grants more as it consumes (ChanCredit frames), so a stream
// whose reader stops stalls that stream only.
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

// take waits for some credit and takes up to max of it; 0 once closed.
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

// giveBack returns credit taken but not used.
func (c *credit) giveBack(n int) { c.grant(n) }

func (c *credit) grant(n int) {
	if n <= 0 {
		return
	}
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

// creditFrom decodes a ChanCredit payload.
func creditFrom(payload []byte) int {
	if len(payload) != 4 {
		return 0
	}
	return int(binary.BigEndian.Uint32(payload))
}

func creditPayload(n int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }
