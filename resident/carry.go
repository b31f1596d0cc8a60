package resident

import (
	"context"
	"io"
	"net"
	"sync"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/provider"
)

// carry joins a host-side TCP connection to an exec's stdin and stdout:
// what the connection sends goes to stdin (its end closes stdin: a
// half-close), what the exec writes goes back (its end half-closes the
// connection). The bytes are the host's own traffic with its own sandbox,
// or the sandbox's with a host the rules allow: they never reach the
// protocol stream or a log, so they are not scrubbed (scrubbing would
// also corrupt compressed or encrypted streams, and see nothing in them).
// It returns once the exec has ended, and closes conn.
func (s *session) carry(conn *net.TCPConn, proc provider.Process, log *zap.Logger) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if _, err := io.Copy(proc.Stdin(), conn); err != nil {
			log.Debug("carried connection: to the sandbox", zap.Error(err))
		}
		_ = proc.Stdin().Close()
	}()
	go func() {
		defer wg.Done()
		s.logStderr(proc.Stderr(), log)
	}()
	_, _ = io.Copy(conn, proc.Stdout())
	_ = conn.CloseWrite()
	if _, err := proc.Wait(); err != nil {
		log.Debug("carried connection: exec", zap.Error(err))
	}
	_ = conn.Close() // ends the copy to the sandbox if it still reads
	wg.Wait()
}

// logStderr drains a relay's stderr and logs its start (why it could not
// connect), scrubbed: it is the sandbox's text.
func (s *session) logStderr(r io.Reader, log *zap.Logger) {
	var head [512]byte
	n, _ := io.ReadFull(r, head[:])
	_, _ = io.Copy(io.Discard, r)
	if n > 0 {
		log.Info("carried connection: the sandbox side said", zap.String("stderr", s.scrub.ScrubString(string(head[:n]))))
	}
}

// startCarry execs argv for one connection, under ctx: the connection
// ends when ctx does.
func (s *session) startCarry(ctx context.Context, sandboxID string, argv []string) (provider.Process, error) {
	return s.prov.Exec(ctx, sandboxID, provider.ExecRequest{Argv: argv, Stdin: true})
}

// carryConns joins a host-side connection to one the provider opened
// inside the sandbox (provider.Dialer), as carry joins it to a relay: the
// client's end half-closes the sandbox side, and the sandbox side's end
// ends both, as the relay's exit does. Socket to socket (local as root),
// the kernel splices the copies; a connection stream of the keeper's
// channel carries each way within its own credit. It returns once both
// copies have ended, and closes both; ctx's end (the forward's or the
// session's) closes them too.
func carryConns(ctx context.Context, conn *net.TCPConn, up provider.Conn) {
	stop := context.AfterFunc(ctx, func() { _ = conn.Close(); _ = up.Close() })
	defer stop()
	toSandbox := make(chan struct{})
	go func() {
		defer close(toSandbox)
		_, _ = io.Copy(up, conn)
		_ = up.CloseWrite()
	}()
	_, _ = io.Copy(conn, up)
	_ = conn.CloseWrite()
	_ = conn.Close()
	_ = up.Close()
	<-toSandbox
}

// halfCloser is a connection whose sending side closes on its own.
type halfCloser interface {
	io.ReadWriteCloser
	CloseWrite() error
}

// carryBoth joins the dialled upstream to the proxy's held connection
// (provider.ProxyAttacher), as an attach exec does: each direction's end
// half-closes the other side, and both must end (the sandbox's client may
// half-close after its request and still read the answer). It closes both
// when done, or when ctx ends.
func carryBoth(ctx context.Context, upstream *net.TCPConn, held halfCloser) {
	stop := context.AfterFunc(ctx, func() { _ = upstream.Close(); _ = held.Close() })
	defer stop()
	toHeld := make(chan struct{})
	go func() {
		defer close(toHeld)
		_, _ = io.Copy(held, upstream)
		_ = held.CloseWrite()
	}()
	_, _ = io.Copy(upstream, held)
	_ = upstream.CloseWrite()
	<-toHeld
	_ = upstream.Close()
	_ = held.Close()
}
