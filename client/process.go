package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// process is a spawned resident. Its stdin and stdout are plain pipes the
// client owns (not exec.Cmd's StdinPipe/StdoutPipe: Wait closes those as
// soon as the process exits, which could drop the last frames unread).
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // write end of the child's stdin
	stdout *os.File // read end of the child's stdout
	logs   *logTail
	exited chan struct{} // closed after Wait returns
}

func startProcess(cmd *exec.Cmd, stderr io.Writer, grace time.Duration) (*process, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("starting the resident: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_, _ = inR.Close(), inW.Close()
		return nil, fmt.Errorf("starting the resident: %w", err)
	}
	p := &process{cmd: cmd, stdin: inW, stdout: outR, logs: &logTail{user: stderr}, exited: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, p.logs
	if cmd.WaitDelay == 0 {
		// A sandbox process that inherited the resident's stderr must not
		// keep Wait (and Close) waiting for the log copy forever.
		cmd.WaitDelay = grace
	}
	err = cmd.Start()
	_, _ = inR.Close(), outW.Close() // the child has its own copies
	if err != nil {
		_, _ = inW.Close(), outR.Close()
		return nil, fmt.Errorf("starting the resident: %w", err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// describe fills e from the exit status; call it after exited is closed.
func (p *process) describe(e *ExitError) {
	st := p.cmd.ProcessState
	e.Code = st.ExitCode()
	if e.Code < 0 {
		e.Signal = strings.TrimPrefix(st.String(), "signal: ")
	}
	e.LastLog = p.logs.last()
}

// logTail passes the resident's stderr on to the host's writer and keeps
// the end of it. It never fails and never blocks on a failed writer: a
// resident whose stderr backs up blocks (protocol §0).
type logTail struct {
	mu      sync.Mutex
	user    io.Writer
	userErr bool
	buf     []byte
}

const logTailBytes = 8 << 10

func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.user != nil && !l.userErr {
		if _, err := l.user.Write(p); err != nil {
			l.userErr = true
		}
	}
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - logTailBytes; over > 0 {
		l.buf = append(l.buf[:0], l.buf[over:]...)
	}
	return len(p), nil
}

// last is the last complete log line, shortened to its message and error
// when it is the resident's zap JSON.
func (l *logTail) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := bytes.Split(bytes.TrimRight(l.buf, "\n"), []byte("\n"))
	line := bytes.TrimSpace(lines[len(lines)-1])
	var entry struct {
		Msg    string `json:"msg"`
		Error  string `json:"error"`
		Reason string `json:"reason"`
	}
	if json.Unmarshal(line, &entry) == nil && entry.Msg != "" {
		text := entry.Msg
		for _, detail := range []string{entry.Error, entry.Reason} {
			if detail != "" {
				text += ": " + detail
			}
		}
		return text
	}
	const max = 300
	if len(line) > max {
		line = append(line[:max:max], "..."...)
	}
	return string(line)
}
