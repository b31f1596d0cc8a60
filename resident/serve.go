package resident

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
)

// Why a session ended; cmd/resident maps these to exit codes.
var (
	// ErrProtocol: the stream cannot be read any more (exit 2).
	ErrProtocol = errors.New("unrecoverable protocol error")
	// ErrCredentialsExpired: credentials expired or were refused (exit 3).
	ErrCredentialsExpired = errors.New("credentials expired")
)

// Causes given to in-flight contexts, turned into error kinds by replyError.
var (
	errShuttingDown = errors.New("the resident is shutting down")
	errHostCancel   = errors.New("cancelled by the host")
	errExpired      = errors.New("credentials expired")
)

// Serve runs one session over rwc until the host sends shutdown (nil), closes
// its end (nil), the credentials expire (ErrCredentialsExpired), or the
// stream breaks (ErrProtocol). Whatever ends it, in-flight work is cancelled
// and given opts.GracePeriod to answer before Serve returns; rwc is closed on
// return.
func Serve(ctx context.Context, rwc io.ReadWriteCloser, opts Options) error {
	opts.fill()
	opts.Scrubber.AddPatterns(opts.Provider.Secrets().Tokens...)
	s := newSession(opts)
	defer s.cancelAll(errShuttingDown)
	s.stream = newFrameStream(rwc, opts.Limits.MaxFrameBytes, opts.Scrubber, s.log.Named("wire"))
	s.stream.budget, s.stream.readCtx = s.budget, s.base
	if opts.Notifier != nil {
		opts.Notifier.bind(s.notifyText)
		defer opts.Notifier.bind(nil)
	}
	conn := jsonrpc2.NewConn(context.Background(), s.stream, s, jsonrpc2.SetLogger(zapPrintf{s.log.Named("jsonrpc2")}))
	s.log.Info("session started", zap.String("provider", opts.Provider.Info().Name), zap.String("version", opts.Version))

	var end error
	select {
	case <-conn.DisconnectNotify():
		end = s.readEnd()
	case <-s.shutdownCh:
		s.log.Info("shutdown requested")
	case <-s.expiredCh:
		end = ErrCredentialsExpired
	case <-ctx.Done():
		end = fmt.Errorf("serve: %w", context.Cause(ctx))
	}
	s.disarmExpiry()
	cause := errShuttingDown
	if errors.Is(end, ErrCredentialsExpired) {
		cause = errExpired
	}
	s.cancelAll(cause)
	if !s.waitHandlers(opts.GracePeriod) {
		s.log.Warn("in-flight requests did not finish within the grace period", zap.Duration("grace", opts.GracePeriod))
	}
	if s.pools != nil && !s.pools.close(opts.GracePeriod) {
		s.log.Warn("pool members still being made when the grace period ended were abandoned; the engine's own cleanup of a cancelled create applies", zap.Duration("grace", opts.GracePeriod))
	}
	_ = conn.Close()
	if err := rwc.Close(); err != nil {
		s.log.Debug("closing the host stream", zap.Error(err))
	}
	s.log.Info("session ended", zap.NamedError("reason", end))
	return end
}

// readEnd explains why reading stopped. A frame error is answered with a
// null-id error first, so the host learns why the resident is leaving.
func (s *session) readEnd() error {
	err := s.stream.readErr
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, io.ErrClosedPipe):
		s.log.Info("host closed its end")
		return nil
	case errors.Is(err, protocol.ErrFrame):
		s.log.Error("unrecoverable frame error", zap.Error(err))
		s.stream.writeError(nil, protocol.CodeParseError, protocol.KindInvalidRequest, err.Error())
		return fmt.Errorf("%w: %v", ErrProtocol, err)
	default:
		s.log.Error("reading from the host failed", zap.Error(err))
		return fmt.Errorf("read: %w", err)
	}
}

func (s *session) waitHandlers(grace time.Duration) bool {
	done := make(chan struct{})
	go func() {
		s.handlers.Wait()
		close(done)
	}()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	}
}

// Notifier lets a provider built before Serve send notifications (image pull
// progress) to the host once the session runs; before that they are dropped.
type Notifier struct {
	mu   sync.RWMutex
	send func(method string, params any)
}

func (n *Notifier) bind(send func(method string, params any)) {
	n.mu.Lock()
	n.send = send
	n.mu.Unlock()
}

// Notify sends a notification whose text fields are scrubbed.
func (n *Notifier) Notify(method string, params any) {
	n.mu.RLock()
	send := n.send
	n.mu.RUnlock()
	if send != nil {
		send(method, params)
	}
}

type zapPrintf struct{ log *zap.Logger }

func (z zapPrintf) Printf(format string, v ...any) { z.log.Debug(fmt.Sprintf(format, v...)) }
