//go:build linux

package local

import (
	"os"
	"time"

	"github.com/resident-dev/resident/protocol"
)

// evictTimeout bounds how long an exclusive exec waits for the sandbox's
// other processes to die. SIGKILL is not refused, so only a process stuck
// in the kernel (an unreachable network file system) takes this long.
const evictTimeout = 10 * time.Second

// evictLocked kills every process of a sandbox and waits until they are
// gone, so that an exclusive exec starts alone: the running execs (which
// then end as killed), the namespaces earlier execs left running, and what
// an earlier resident left (found by root directory, which every isolated
// process of the sandbox has as its own). Called with p.mu held, so no exec of the
// sandbox can start meanwhile.
func (p *Provider) evictLocked(sandboxID string) error {
	for pr := range p.running[sandboxID] {
		pr.evict()
	}
	for ns := range p.namespaces[sandboxID] {
		ns.kill()
	}
	inSandbox := inSandbox(p.sandboxDir(sandboxID), nil)
	killWhere(inSandbox)
	deadline := time.Now().Add(evictTimeout)
	for ns := range p.namespaces[sandboxID] {
		if !ns.awaitEnd(time.Until(deadline)) {
			return protocol.Errorf(protocol.KindTransient, "exec exclusive: a process of the sandbox did not die within %s", evictTimeout)
		}
		ns.close()
		delete(p.namespaces[sandboxID], ns)
	}
	for anyLive(inSandbox) {
		if time.Now().After(deadline) {
			return protocol.Errorf(protocol.KindTransient, "exec exclusive: a process of the sandbox did not die within %s", evictTimeout)
		}
		time.Sleep(5 * time.Millisecond)
		killWhere(inSandbox)
	}
	return nil
}

// evict kills a running exec for an exclusive one; it then reports Killed.
func (pr *process) evict() {
	pr.mu.Lock()
	running := !pr.exited
	pr.mu.Unlock()
	if running {
		pr.evicted.Store(true)
		pr.killTree()
	}
}

// anyLive reports whether a live process other than the resident matches.
func anyLive(match func(procInfo) bool) bool {
	self := os.Getpid()
	for _, pi := range snapshot() {
		if !pi.zombie && pi.pid != self && match(pi) {
			return true
		}
	}
	return false
}

// errUnisolatedExclusive refuses what local cannot honour without bwrap: a
// process can leave every set the resident could find it by.
var errUnisolatedExclusive = protocol.Errorf(protocol.KindInvalidRequest,
	"exec exclusive: local runs execs unisolated here (no working bwrap), so it cannot stop every other process of the sandbox; install %s", bwrapPackage)
