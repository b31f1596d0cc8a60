package external

import (
	"context"
	"io"
	"strconv"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/wire"
)

// readStream is one store/read_file in flight: its data arrives as
// notifications into buf, under the same credit window as exec output.
type readStream struct {
	p       *Provider
	c       *child
	id      string
	buf     *outBuffer
	granted int64
	cancel  context.CancelFunc
	done    chan error
}

func (p *Provider) ReadFile(ctx context.Context, owner provider.Owner, root, path string) (io.ReadCloser, error) {
	return p.readStream(ctx, wire.MethodReadFile, func(id string) any {
		return wire.ReadFileParams{Owner: wire.Owner(owner), Root: root, Path: path, StreamID: id}
	})
}

// readStream runs a request that streams a file as store/data under a
// stream id of ours (store/read_file, sandbox/read_file).
func (p *Provider) readStream(ctx context.Context, method string, params func(streamID string) any) (io.ReadCloser, error) {
	c, err := p.current(ctx)
	if err != nil {
		return nil, err
	}
	rs := &readStream{p: p, c: c, id: "r" + strconv.FormatUint(p.seq.Add(1), 10), done: make(chan error, 1)}
	p.mu.Lock()
	rs.buf = newOutBuffer(nil)
	rs.buf.onRead = rs.consumed
	p.reads[rs.id] = rs
	p.mu.Unlock()
	rctx, cancel := context.WithCancel(ctx)
	rs.cancel = cancel
	go func() {
		// The read's whole life is one request, so it has no provider
		// deadline of its own: a slow host holds it, as credit says.
		err := p.streamCall(rctx, c, method, params(rs.id))
		p.mu.Lock()
		delete(p.reads, rs.id)
		p.mu.Unlock()
		rs.done <- err
		rs.buf.closeWith(err)
	}()
	// Answer like the built-in providers: a read that cannot start (no such
	// file, a directory, a path out of the volume) fails here, not at Read.
	select {
	case <-rs.buf.started:
		return rs, nil
	case err := <-rs.done:
		if err != nil {
			cancel()
			return nil, err
		}
		return rs, nil
	}
}

func (rs *readStream) Read(b []byte) (int, error) { return rs.buf.Read(b) }

func (rs *readStream) Close() error {
	rs.cancel()
	rs.buf.closeWith(protocol.Errorf(protocol.KindCancelled, "read closed"))
	return nil
}

func (rs *readStream) consumed(n int) {
	rs.granted += int64(n)
	if rs.granted >= rs.p.window/4 {
		grant := rs.granted
		rs.granted = 0
		_ = rs.c.conn.Notify(context.Background(), wire.NotifyStoreCredit, wire.StoreCredit{StreamID: rs.id, Bytes: grant})
	}
}

// streamCall is a request whose answer may take as long as its stream: no
// provider deadline, cancelled with the context, failed when the child dies.
func (p *Provider) streamCall(ctx context.Context, c *child, method string, params any) error {
	return p.streamCallResult(ctx, c, method, params, nil)
}

func (p *Provider) streamCallResult(ctx context.Context, c *child, method string, params, result any) error {
	var id jsonrpc2.ID
	call, err := c.conn.DispatchCall(ctx, method, params, jsonrpc2.PickID(p.nextID(&id)))
	if err != nil {
		return p.lost(c, method, err)
	}
	done := make(chan error, 1)
	go func() { done <- call.Wait(ctx, result) }()
	select {
	case err = <-done:
	case <-c.gone:
		return p.lost(c, method, err)
	}
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return asWireError(p.name, method, err)
}
