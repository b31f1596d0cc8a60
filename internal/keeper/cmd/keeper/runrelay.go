package main

import (
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// With "run -relay" the child's stdout and stderr are pipes the keeper
// copies to its own, and the run ends once the child has exited and the
// pipes were silent for relayIdle (relayMax after the exit at most). It is
// for transports whose stream lasts as long as anything holds its output
// open and that have no other word of the exit (a Kubernetes exec: the
// runtime ends it when every writer closed): a background child holding
// the pipes then no longer holds the exec, which ends with the keeper, as
// Docker's provider ends its exec from the engine's exit state. The child
// left behind keeps running; its later output goes nowhere.
const (
	relayIdle = 300 * time.Millisecond
	relayMax  = 5 * time.Second
)

type childRelay struct {
	outR, outW, errR, errW *os.File
	last                   atomic.Int64 // unix nanos of the last copied chunk
	copied                 sync.WaitGroup
}

func newChildRelay() (*childRelay, error) {
	r := &childRelay{}
	var err error
	if r.outR, r.outW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if r.errR, r.errW, err = os.Pipe(); err != nil {
		r.outR.Close()
		r.outW.Close()
		return nil, err
	}
	return r, nil
}

// started closes the keeper's copies of the write ends (the child holds
// its own) and starts copying.
func (r *childRelay) started() {
	r.outW.Close()
	r.errW.Close()
	r.last.Store(time.Now().UnixNano())
	r.copied.Go(func() { r.copy(os.Stdout, r.outR) })
	r.copied.Go(func() { r.copy(os.Stderr, r.errR) })
}

func (r *childRelay) copy(dst io.Writer, src *os.File) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			r.last.Store(time.Now().UnixNano())
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// drain returns when both pipes reached EOF (nothing holds them), or they
// were silent for relayIdle, or relayMax passed: called once the child
// exited.
func (r *childRelay) drain() {
	done := make(chan struct{})
	go func() { r.copied.Wait(); close(done) }()
	exited := time.Now()
	r.last.Store(max(r.last.Load(), exited.UnixNano()))
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			if now.Sub(time.Unix(0, r.last.Load())) >= relayIdle || now.Sub(exited) >= relayMax {
				return
			}
		}
	}
}
