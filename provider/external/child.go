package external

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider/external/wire"
)

// child is one run of the provider program and its connection. A child
// that dies is never reused: the supervisor starts a new one.
type child struct {
	cmd    *exec.Cmd
	conn   *jsonrpc2.Conn
	stream *childStream
	// gone is closed when the connection ends (exit, junk on stdout, kill).
	gone chan struct{}
	// cause says why; set before gone closes.
	cause error
	stdin io.WriteCloser
	// drained is closed when stderr reached EOF; watched when the
	// supervisor has dealt with the child's end.
	drained chan struct{}
	watched chan struct{}
}

// start spawns argv in a process group of its own that dies with the
// resident, and connects to it. handler gets the provider's notifications
// on the connection's read loop, in order.
// onData gets the data frames of connection streams there too.
func start(argv []string, log func() *zap.Logger, maxFrame int, handler func(*child, *jsonrpc2.Request), onData func(string, []byte)) (*child, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = os.Environ()
	cmd.SysProcAttr = childProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	// Our own pipe, not StderrPipe: Wait must not close it under the
	// drain, which reads until every writer (grandchildren too) is gone.
	stderr, stderrW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = stderrW
	err = cmd.Start()
	stderrW.Close()
	if err != nil {
		stderr.Close()
		return nil, protocol.Errorf(protocol.KindInvalidRequest, "external provider %q: %w", argv[0], err)
	}
	c := &child{cmd: cmd, gone: make(chan struct{}), stdin: stdin, drained: make(chan struct{}), watched: make(chan struct{})}
	go func() {
		drainStderr(stderr, log)
		stderr.Close()
		close(c.drained)
	}()
	stream := &childStream{Stream: wire.NewStream(stdout, stdin, stdin, maxFrame)}
	stream.OnData = onData
	c.stream = stream
	c.conn = jsonrpc2.NewConn(context.Background(), stream, jsonrpc2.HandlerWithError(
		func(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
			if !req.Notif {
				return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "the resident serves no requests"}
			}
			handler(c, req)
			return nil, nil
		}), jsonrpc2.SetLogger(zap.NewStdLog(log())))
	go func() {
		<-c.conn.DisconnectNotify()
		// A provider whose stdout ended is leaving or broken: give it a
		// moment to exit by itself, then end its whole group.
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		var err error
		select {
		case err = <-exited:
			c.kill()
		case <-time.After(stopGrace):
			c.kill()
			err = <-exited
		}
		switch {
		case stream.readError() != nil && !errors.Is(stream.readError(), io.EOF) && !errors.Is(stream.readError(), os.ErrClosed):
			c.cause = fmt.Errorf("it broke the protocol on stdout (only frames may go there): %v", stream.readError())
		case err != nil:
			c.cause = fmt.Errorf("it exited: %v", err)
		default:
			c.cause = errors.New("it exited")
		}
		close(c.gone)
	}()
	return c, nil
}

// childStream remembers why reading ended, to tell junk from an exit. The
// read loop sets it while the supervisor may already be looking (a kill
// closes the connection under the loop), so it is guarded.
type childStream struct {
	*wire.Stream
	mu      sync.Mutex
	readErr error
}

func (s *childStream) readError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readErr
}

func (s *childStream) ReadObject(v any) error {
	err := s.Stream.ReadObject(v)
	if err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			err = fmt.Errorf("a frame that is not JSON: %w", err)
		}
		s.mu.Lock()
		s.readErr = err
		s.mu.Unlock()
	}
	return err
}

// Notify and Data make a child a wire.Sender of its connection streams.
func (c *child) Notify(method string, params any) error {
	return c.conn.Notify(context.Background(), method, params)
}

func (c *child) Data(connID string, data []byte) error { return c.stream.WriteData(connID, data) }

// kill ends the provider's whole process group at once.
func (c *child) kill() {
	if c.cmd.Process != nil {
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	}
	_ = c.conn.Close()
}

// stop is the shutdown ladder: shutdown, stdin EOF, SIGTERM, SIGKILL.
func (c *child) stop(grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	// A string id: the connection's own numbering would collide with the
	// numbers Provider.nextID picks for every other call.
	_ = c.conn.Call(ctx, wire.MethodShutdown, nil, nil, jsonrpc2.PickID(jsonrpc2.ID{Str: "shutdown", IsString: true}))
	cancel()
	_ = c.stdin.Close()
	for _, sig := range []syscall.Signal{0, syscall.SIGTERM} {
		select {
		case <-c.gone:
			return
		case <-time.After(grace):
		}
		if sig != 0 && c.cmd.Process != nil {
			_ = syscall.Kill(-c.cmd.Process.Pid, sig)
		}
	}
	select {
	case <-c.gone:
	case <-time.After(grace):
		c.kill()
		<-c.gone
	}
}

// settle waits for the supervisor and, a bounded while, for the stderr drain
// (a grandchild may hold stderr open), so nothing logs after Close.
func (c *child) settle(grace time.Duration) {
	<-c.watched
	select {
	case <-c.drained:
	case <-time.After(grace):
	}
}

// drainStderr logs every line the provider writes; the logger is the
// resident's, so every line is scrubbed. A line past 64 KiB is split.
func drainStderr(r io.Reader, logger func() *zap.Logger) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for {
		for sc.Scan() {
			line := sc.Bytes()
			log := logger()
			var entry struct {
				Level string `json:"level"`
				Msg   string `json:"msg"`
			}
			if json.Unmarshal(line, &entry) == nil && entry.Msg != "" {
				switch entry.Level {
				case "error":
					log.Error(entry.Msg, zap.ByteString("line", line))
				case "warn", "warning":
					log.Warn(entry.Msg, zap.ByteString("line", line))
				case "debug":
					log.Debug(entry.Msg, zap.ByteString("line", line))
				default:
					log.Info(entry.Msg, zap.ByteString("line", line))
				}
				continue
			}
			log.Info("provider stderr", zap.ByteString("line", line))
		}
		if !errors.Is(sc.Err(), bufio.ErrTooLong) {
			return
		}
		sc = bufio.NewScanner(r) // drop the rest of an overlong line, keep draining
		sc.Buffer(make([]byte, 64<<10), 64<<10)
	}
}
