package keeperexec

import (
	"context"
	"errors"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Dial is provider.Dialer's DialSandbox over a held channel: a connection
// stream to 127.0.0.1:port inside the sandbox that the keeper carries
// itself, with no exec and no process per connection, and its own credit
// each way. A keeper without the feature (an older keeper binary in an
// image) is provider.ErrNoDial: the resident falls back to the exec of
// RelayCommand. A port nothing listens on is transient (a server not up yet), with the
// keeper's reason; a broken channel transient.
func Dial(ctx context.Context, conn *channel.Conn, port int) (provider.Conn, error) {
	nc, err := conn.Dial(ctx, port)
	if err != nil {
		return nil, dialError(err)
	}
	return nc, nil
}

// AttachProxy is provider.ProxyAttacher's AttachProxy over a held channel:
// the keeper joins the egress proxy's held connection id, as the exec of
// AttachCommand would.
func AttachProxy(ctx context.Context, conn *channel.Conn, id string) (provider.Conn, error) {
	nc, err := conn.DialProxy(ctx, id)
	if err != nil {
		return nil, dialError(err)
	}
	return nc, nil
}

func dialError(err error) error {
	var ne *channel.NetError
	switch {
	case errors.Is(err, channel.ErrUnsupported):
		return provider.ErrNoDial
	case errors.As(err, &ne):
		return &protocol.Error{Kind: protocol.KindTransient, Msg: "connect inside the sandbox: " + ne.Reason + ": " + ne.Msg, Err: err}
	case errors.Is(err, channel.ErrFenced):
		return &protocol.Error{Kind: protocol.KindTransient, Msg: "connect inside the sandbox: another resident took this sandbox's channel over", Err: err}
	case errors.Is(err, channel.ErrBroken):
		return &protocol.Error{Kind: protocol.KindTransient, Msg: "connect inside the sandbox: the sandbox's channel broke", Err: err}
	}
	return err
}
