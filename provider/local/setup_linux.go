//go:build linux

package local

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"time"
)

// setupAttempts is how often an exec tries bwrap. Its setup can fail for
// reasons of the moment: it remounts every host mount below / in its own
// namespace, and one that the host unmounts meanwhile (a container
// stopping) fails the remount with EINVAL.
const setupAttempts = 3

// setupTimeout bounds bwrap's setup; it normally takes milliseconds.
const setupTimeout = 30 * time.Second

// setupError is a bwrap that ended before starting the command. Its
// message never reaches the host as exec output: start reads it off the
// stderr pipe before any reader exists.
type setupError struct{ msg string }

func (e *setupError) Error() string { return "bwrap could not set up the namespace: " + e.msg }

// confirmSetup returns once bwrap started the command (its pid 1 forked
// it), or with a setupError when bwrap ended first without starting it.
// It also takes hold of the namespace. Until it returns nobody reads the
// exec's pipes, so a failed setup leaves no trace in the exec's output.
func (p *Provider) confirmSetup(sandboxID string, pr *process, statusR, errR *os.File) error {
	deadline := time.Now().Add(setupTimeout)
	_ = statusR.SetReadDeadline(deadline)
	dec := json.NewDecoder(statusR)
	var info namespaceInfo
	if err := dec.Decode(&info); err != nil || info.InitPID <= 0 {
		return p.setupFailed(pr, errR)
	}
	p.holdNamespace(sandboxID, pr, info)
	if awaitCommand(info.InitPID, pr.cmd.Process.Pid, deadline) {
		_ = statusR.SetReadDeadline(time.Time{})
		pr.statusR = statusR // bwrap writes its exit document there: kept open so it never meets EPIPE
		return nil
	}
	// bwrap ended before its pid 1 was seen with a child: the command may
	// have run and ended that fast, which the exit document tells.
	var exit exitDocument
	if dec.Decode(&exit) == nil && exit.ExitCode != nil {
		pr.statusR = statusR
		return nil
	}
	return p.setupFailed(pr, errR)
}

// awaitCommand waits until bwrap's pid 1 has forked the command, which it
// does only after the whole setup, or until bwrap itself ended.
func awaitCommand(initPID, bwrapPID int, deadline time.Time) bool {
	children := "/proc/" + strconv.Itoa(initPID) + "/task/" + strconv.Itoa(initPID) + "/children"
	pause := 20 * time.Microsecond
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(children); err == nil && len(bytes.TrimSpace(data)) > 0 {
			return true
		}
		if pi, ok := readProc(bwrapPID); !ok || pi.zombie {
			return false
		}
		time.Sleep(pause)
		pause = min(2*pause, 250*time.Microsecond)
	}
	return false
}

// setupFailed reaps bwrap and takes its message off the stderr pipe. Every
// writer is gone by then (the resident closed its copies), so the read ends.
func (p *Provider) setupFailed(pr *process, errR *os.File) error {
	pr.killTree() // only past the deadline is it still running
	pr.mu.Lock()
	pr.exited = true // reaped next: its pid is no longer ours to signal
	pr.mu.Unlock()
	_ = pr.cmd.Wait()
	_ = errR.SetReadDeadline(time.Now().Add(time.Second))
	msg, _ := io.ReadAll(io.LimitReader(errR, 4096))
	return &setupError{msg: string(bytes.TrimSpace(msg))}
}

// abandon forgets an exec whose bwrap never started the command.
func (p *Provider) abandon(sandboxID string, pr *process) {
	p.mu.Lock()
	delete(p.running[sandboxID], pr)
	p.mu.Unlock()
	pr.mu.Lock()
	ns := pr.ns
	pr.mu.Unlock()
	if ns != nil {
		p.mu.Lock()
		delete(p.namespaces[sandboxID], ns)
		p.mu.Unlock()
		ns.kill()
		ns.close()
	}
}
