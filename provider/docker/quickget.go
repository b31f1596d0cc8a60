package docker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
)

// The per-op reads (read_owner's inspect, list_owned's list, the inspect
// that starts a terminate) are the whole of those ops' engine work, and
// through the SDK each paid more than the engine did: net/http hands a
// request to a connection's write loop and its answer back from the read
// loop, two goroutine wake-ups per call on two cores, behind the SDK's
// OpenTelemetry and hook transports. quickGet writes the request and reads
// the answer in the calling goroutine, on connections of its own to a
// unix-socket engine. It takes only the answers it can judge alone: 200
// and 404. Anything else (another status, a 401 the unauthorized hook must
// see, a broken connection, another kind of engine address) is asked
// again through the SDK, whose answer is classified and hooked as every
// other call's.

// quickIdleConns is how many idle connections are kept: per-op calls
// arrive one at a time from a host, a few at once from a harness.
const quickIdleConns = 4

// quickBodyLimit bounds an answer read into memory: a list of thousands
// of sandboxes fits; past it the SDK streams the answer instead.
const quickBodyLimit = 8 << 20

var errQuickBodyTooLarge = errors.New("answer too large for a quick read")

type quickConns struct {
	mu     sync.Mutex
	idle   []*quickConn
	closed bool
}

type quickConn struct {
	net.Conn
	br *bufio.Reader
}

// quickGet is GET path (from "/containers/..."), decoded into out when the
// engine answered 200. found is false for a 404; handled is false when the
// caller must ask the SDK.
func (p *Provider) quickGet(ctx context.Context, path string, out any) (found, handled bool) {
	if !strings.HasPrefix(p.cli.DaemonHost(), "unix://") {
		return false, false
	}
	c, err := p.quick.take(ctx, p.cli.Dialer())
	if err != nil {
		return false, false
	}
	// A cancel or the call's bound interrupts the read where it waits.
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	target := path
	if v := p.cli.ClientVersion(); v != "" {
		target = "/v" + v + path
	}
	status, body, reusable, err := c.get(target)
	if !stop() {
		reusable = false // its deadline was set in the past
	}
	if err == nil && reusable {
		p.quick.put(c)
	} else {
		_ = c.Close()
	}
	switch {
	case err != nil:
		return false, false
	case status == http.StatusNotFound:
		return false, true
	case status == http.StatusOK:
		return true, json.Unmarshal(body, out) == nil
	}
	return false, false
}

// get sends one GET and reads its whole answer.
func (c *quickConn) get(target string) (status int, body []byte, reusable bool, err error) {
	if _, err := io.WriteString(c.Conn, "GET "+target+" HTTP/1.1\r\nHost: "+client.DummyHost+"\r\nUser-Agent: resident\r\n\r\n"); err != nil {
		return 0, nil, false, err
	}
	resp, err := http.ReadResponse(c.br, &http.Request{Method: http.MethodGet})
	if err != nil {
		return 0, nil, false, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, quickBodyLimit+1))
	if err == nil && len(body) > quickBodyLimit {
		err = errQuickBodyTooLarge
	}
	return resp.StatusCode, body, err == nil && !resp.Close, err
}

func (q *quickConns) take(ctx context.Context, dial func(context.Context) (net.Conn, error)) (*quickConn, error) {
	q.mu.Lock()
	if n := len(q.idle); n > 0 {
		c := q.idle[n-1]
		q.idle = q.idle[:n-1]
		q.mu.Unlock()
		return c, nil
	}
	q.mu.Unlock()
	conn, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	return &quickConn{Conn: conn, br: bufio.NewReaderSize(conn, 32<<10)}, nil
}

func (q *quickConns) put(c *quickConn) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || len(q.idle) >= quickIdleConns {
		_ = c.Close()
		return
	}
	q.idle = append(q.idle, c)
}

func (q *quickConns) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for _, c := range q.idle {
		_ = c.Close()
	}
	q.idle = nil
}
