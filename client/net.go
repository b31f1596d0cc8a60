package client

import (
	"context"

	"github.com/resident-dev/resident/protocol"
)

// ForwardPort forwards a port inside a sandbox to a loopback address on the
// resident's machine (sandbox/forward_port). Every connection to the
// address reaches 127.0.0.1:port in the sandbox until ClosePort, the
// sandbox's end, or this session's.
func (c *Client) ForwardPort(ctx context.Context, sandboxID string, port int) (*protocol.ForwardPortResult, error) {
	var res protocol.ForwardPortResult
	if err := c.call(ctx, protocol.MethodForwardPort, protocol.ForwardPortParams{SandboxID: sandboxID, Port: port}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// ClosePort ends a forward (port/close); existed is false when it had
// already ended.
func (c *Client) ClosePort(ctx context.Context, forwardID string) (existed bool, err error) {
	var res protocol.PortCloseResult
	if err := c.call(ctx, protocol.MethodPortClose, protocol.PortCloseParams{ForwardID: forwardID}, &res); err != nil {
		return false, err
	}
	return res.Existed, nil
}

// Done is closed once the resident's stream has ended (it exited or
// closed it): a forward, which lives with the session, is gone then.
func (c *Client) Done() <-chan struct{} { return c.conn.done }
