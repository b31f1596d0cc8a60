package main

import (
	"runtime"
	"sync"
)

// runThreads is how many OS threads "keeper run" may ever need at once
// beyond sysmon: the main goroutine in wait4, the control reader in a
// blocking read of stdin, os/signal's receiver, and one to run everything
// else (the killer, the stdin feed, timers, the collector) on the single P,
// plus one spare for a syscall that outlasts sysmon's patience.
const runThreads = 5

// reserveThreads makes the Go runtime create, now, every thread this
// process will need, and keep them: idle threads are never given back.
// Threads count against the sandbox's pids limit, and a runtime that
// cannot make one dies ("failed to create new OS thread"). Made here, before
// the keeper says "ok", that death is a start failure the provider explains
// (a sandbox at its pids limit) and no child exists yet; made later, it
// would orphan a running child and report exit 2.
//
// Each goroutine locks itself to a thread and parks until all are in, so
// the runtime must give each its own. Then each unlocks and ends, and only
// when all have ended does the caller go on: a locked goroutine still
// waiting to run needs its own thread, so a syscall in the caller (the
// "ok" line) would make the runtime hand the single P to a new thread it
// may not be allowed to make. Once they have ended, every thread but the
// caller's is idle, and the runtime reuses idle threads before it makes one.
func reserveThreads(n int) {
	var in, out sync.WaitGroup
	release := make(chan struct{})
	for range n - 1 { // the calling goroutine's thread is one of them
		in.Add(1)
		out.Add(1)
		go func() {
			defer out.Done()
			runtime.LockOSThread()
			in.Done()
			<-release
			runtime.UnlockOSThread()
		}()
	}
	in.Wait()
	close(release)
	out.Wait()
}
