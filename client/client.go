package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resident-dev/resident/protocol"
)

// DefaultCloseGrace is how long Close waits for the resident to exit after
// closing its stdin. The resident needs about 2 s at most (§3.4 of the
// protocol: a 1.5 s grace for in-flight work, then provider cleanup).
const DefaultCloseGrace = 5 * time.Second

// exitWait bounds how long a failed call waits to learn the exit status of a
// resident whose stream has ended.
const exitWait = 5 * time.Second

// Options configure a Client. The zero value is usable.
//
// The callbacks (OnCredentialsExpired, OnPullProgress) run one at a time,
// in the order the events arrived, on a goroutine of the Client's own: a
// callback may block or call the Client (Close it and spawn a fresh
// resident on expiry, say) without holding up answers.
type Options struct {
	// Stderr receives the resident's log lines (zap JSON, one per line,
	// already scrubbed). Nil discards them. Either way the client keeps the
	// last lines to explain an unexpected exit (ExitError.LastLog). A
	// failing Stderr is dropped, never allowed to block the resident.
	Stderr io.Writer
	// OnCredentialsExpired is called once, with the resident's message,
	// when resident/credentials_expired arrives. Every later call fails
	// with ErrCredentialsExpired; the resident exits with code 3.
	OnCredentialsExpired func(message string)
	// OnPullProgress is called for each sandbox/pull_progress, in order,
	// while Create pulls an image (providers with capabilities.image_pull).
	OnPullProgress func(protocol.PullProgress)
	// OnBuildProgress is called for each image/build_progress, in order.
	OnBuildProgress func(protocol.BuildProgress)
	// CloseGrace is how long Close waits for a spawned resident to exit
	// before it kills it. Zero means DefaultCloseGrace.
	CloseGrace time.Duration
}

// Client is one session with one resident. Its methods are safe for
// concurrent use; requests run concurrently in the resident, and each
// method returns when its own response arrives.
type Client struct {
	conn   *conn
	opts   Options
	closer io.Closer // Attach: the stream
	proc   *process  // Spawn: the child process

	events  *events
	info    atomic.Pointer[protocol.InitializeResult]
	ids     atomic.Int64
	expired chan struct{}
	expMsg  atomic.Pointer[string]
	closed  atomic.Bool

	closeOnce sync.Once
	closeErr  error
	goneOnce  sync.Once
	gone      *ExitError
}

// Spawn starts cmd (a resident binary and its flags) and returns a client
// speaking to it over the child's stdin and stdout. cmd.Stdin, cmd.Stdout and
// cmd.Stderr must be nil: the client owns them (see Options.Stderr). The
// next call should be Initialize. Close the client to stop the process.
//
//	c, err := client.Spawn(exec.Command("resident", "--provider", "local"), client.Options{})
func Spawn(cmd *exec.Cmd, opts Options) (*Client, error) {
	if cmd.Stdin != nil || cmd.Stdout != nil || cmd.Stderr != nil {
		return nil, errors.New("client.Spawn: cmd.Stdin, Stdout and Stderr must be nil; the client owns them (use Options.Stderr for the logs)")
	}
	p, err := startProcess(cmd, opts.Stderr, opts.closeGrace())
	if err != nil {
		return nil, err
	}
	c := newClient(p.stdin, opts)
	c.proc = p
	go func() {
		c.conn.readLoop(p.stdout)
		_ = p.stdout.Close()
	}()
	return c, nil
}

// Attach returns a client speaking over rwc, a stream to a resident that
// something else started (a socket, an in-process resident.Serve over a
// pipe). Close closes rwc; rwc's Close must make a blocked Read return.
func Attach(rwc io.ReadWriteCloser, opts Options) *Client {
	c := newClient(rwc, opts)
	c.closer = rwc
	go c.conn.readLoop(rwc)
	return c
}

func newClient(w io.Writer, opts Options) *Client {
	c := &Client{opts: opts, expired: make(chan struct{}), events: newEvents()}
	c.conn = newConn(w, c.onNotification)
	go c.events.run(c.conn.done)
	return c
}

func (o Options) closeGrace() time.Duration {
	if o.CloseGrace > 0 {
		return o.CloseGrace
	}
	return DefaultCloseGrace
}

// Initialize opens the session; it must be the first call, and nothing else
// may be sent until it returns. A zero ProtocolVersion means protocol.Version.
// A refused Initialize can be retried with fixed params, except an
// unauthorized one (credentials_expire_at in the past), after which the
// resident exits with code 3.
func (c *Client) Initialize(ctx context.Context, p protocol.InitializeParams) (*protocol.InitializeResult, error) {
	if p.ProtocolVersion == 0 {
		p.ProtocolVersion = protocol.Version
	}
	var res protocol.InitializeResult
	if err := c.call(ctx, protocol.MethodInitialize, p, &res); err != nil {
		return nil, err
	}
	c.conn.setMaxFrame(res.Limits.MaxFrameBytes)
	c.info.Store(&res)
	return &res, nil
}

// Info is the result of the successful Initialize, or nil before it.
func (c *Client) Info() *protocol.InitializeResult { return c.info.Load() }

// Shutdown asks the resident to stop: it answers, cancels in-flight work and
// exits with code 0. Sandboxes are not terminated. Call Close afterwards to
// reap the process.
func (c *Client) Shutdown(ctx context.Context) error {
	return c.call(ctx, protocol.MethodShutdown, nil, nil)
}

// Expired is closed when resident/credentials_expired arrives.
func (c *Client) Expired() <-chan struct{} { return c.expired }

// ExpiredMessage is the resident's message once Expired is closed, else "".
func (c *Client) ExpiredMessage() string {
	if m := c.expMsg.Load(); m != nil {
		return *m
	}
	return ""
}

func (c *Client) onNotification(method string, params any) {
	switch p := params.(type) {
	case protocol.CredentialsExpired:
		msg := p.Message
		if msg == "" {
			msg = "credentials expired"
		}
		if c.expMsg.CompareAndSwap(nil, &msg) {
			close(c.expired)
			if cb := c.opts.OnCredentialsExpired; cb != nil {
				c.events.push(func() { cb(msg) })
			}
		}
	case protocol.PullProgress:
		if cb := c.opts.OnPullProgress; cb != nil {
			c.events.push(func() { cb(p) })
		}
	case protocol.BuildProgress:
		if cb := c.opts.OnBuildProgress; cb != nil {
			c.events.push(func() { cb(p) })
		}
	}
}

func (c *Client) newID(prefix string) string {
	return prefix + "-" + strconv.FormatInt(c.ids.Add(1), 10)
}

// call sends one request and waits for its response.
func (c *Client) call(ctx context.Context, method string, params, result any) error {
	pc, err := c.start(ctx, method, params)
	if err != nil {
		return err
	}
	return c.await(ctx, pc, result)
}

func (c *Client) start(ctx context.Context, method string, params any) (*pendingCall, error) {
	if c.closed.Load() {
		return nil, fmt.Errorf("%s: %w", method, ErrClosed)
	}
	if msg := c.ExpiredMessage(); msg != "" {
		return nil, fmt.Errorf("%s: %w (%s)", method, ErrCredentialsExpired, msg)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s: %w", method, context.Cause(ctx))
	}
	pc, err := c.conn.start(method, params)
	if errors.Is(err, errLost) {
		return nil, fmt.Errorf("%s: %w", method, c.lost(err))
	}
	return pc, err
}

// await waits for pc's response. When ctx ends first it sends
// $/cancelRequest and keeps waiting: the resident owes exactly one answer
// (cancelled; a result, should one come, is returned, as the work was done).
// A cancelled call's error matches both ErrCancelled and ctx's error.
func (c *Client) await(ctx context.Context, pc *pendingCall, result any) error {
	var r response
	var cause error
	select {
	case r = <-pc.ch:
	case <-ctx.Done():
		cause = context.Cause(ctx)
		_ = c.conn.send(outgoing{Method: protocol.MethodCancelRequest, Params: protocol.CancelParams{ID: pc.id}})
		r = <-pc.ch
	}
	switch {
	case r.lost:
		return fmt.Errorf("%s: %w", pc.method, c.lost(errLost))
	case r.err != nil && cause != nil:
		return fmt.Errorf("%w: %w", r.err, cause)
	case r.err != nil:
		return r.err
	case result == nil:
		return nil
	}
	if err := json.Unmarshal(r.result, result); err != nil {
		return fmt.Errorf("%s: decoding the result: %w", pc.method, err)
	}
	return nil
}

// lost explains a call that will get no answer: once the read loop has
// ended, an *ExitError with the process's exit status and last log line.
func (c *Client) lost(cause error) error {
	select {
	case <-c.conn.done:
	case <-time.After(exitWait):
		return cause // the write side broke but the stream is still open
	}
	c.goneOnce.Do(func() { c.gone = c.exitError() })
	return c.gone
}

func (c *Client) exitError() *ExitError {
	nullErr, readErr := c.conn.ended()
	e := &ExitError{Code: -1, Protocol: nullErr}
	if readErr != nil && !errors.Is(readErr, io.EOF) {
		e.Stream = readErr
	}
	if c.proc != nil {
		select {
		case <-c.proc.exited:
			c.proc.describe(e)
		case <-time.After(exitWait):
			e.Stream = errors.Join(e.Stream, errors.New("the resident closed its stdout but is still running"))
		}
	}
	return e
}

// Close ends the session. For a spawned resident it closes the child's
// stdin (the resident cancels in-flight work and exits 0), waits up to
// CloseGrace for it to exit, then kills it. It returns nil after a clean
// exit (code 0), else an *ExitError. Calls still in flight get their answers
// (usually cancelled) or an *ExitError; later calls fail with ErrClosed.
// Close is idempotent.
func (c *Client) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Client) close() error {
	c.closed.Store(true)
	if c.proc == nil {
		err := c.closer.Close()
		<-c.conn.done
		return err
	}
	_ = c.proc.stdin.Close()
	killed := false
	timer := time.NewTimer(c.opts.closeGrace())
	defer timer.Stop()
	select {
	case <-c.proc.exited:
	case <-timer.C:
		_ = c.proc.cmd.Process.Kill()
		<-c.proc.exited
		killed = true
	}
	// The frame descriptor is close-on-exec, so stdout ends with the
	// process; the bound covers a resident that leaked it to a child.
	select {
	case <-c.conn.done:
	case <-time.After(time.Second):
		_ = c.proc.stdout.Close()
		<-c.conn.done
	}
	e := c.exitError()
	e.Killed = killed
	if e.Code == 0 && !killed {
		return nil
	}
	return e
}
