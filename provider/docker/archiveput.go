package docker

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
)

// putArchive is PUT /containers/{id}/archive of body into dir on a
// connection of its own, made by the SDK's dialer (the one the attach
// stream uses: unix, tcp, TLS or a connection helper alike). Not the SDK's
// CopyToContainer: its OpenTelemetry transport wraps the body in a reader
// that hides WriteTo, so the engine's socket was written 32 KiB at a time.
// Nor net/http's request writer: its chunked encoding copies part of every
// chunk into a buffer and writes a chunk in three writes. Here the request
// is written by hand, chunked, each of the body's writes (256 KiB, as the
// upload gives them) one chunk in one vectored write with its framing. It
// returns once the engine has answered, and ctx ending closes the
// connection.
func (p *Provider) putArchive(ctx context.Context, id, dir string, body io.Reader) error {
	conn, err := p.cli.Dialer()(ctx)
	if err != nil {
		return classify(ctx, "write_file: archive upload", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	target := "/containers/" + id + "/archive?" + url.Values{"path": {dir}, "noOverwriteDirNonDir": {"true"}}.Encode()
	if v := p.cli.ClientVersion(); v != "" {
		target = "/v" + v + target
	}
	req, err := http.NewRequest(http.MethodPut, target, nil)
	if err != nil {
		return err
	}
	cw := &chunkedBody{w: conn, head: []byte(http.MethodPut + " " + req.URL.RequestURI() + " HTTP/1.1\r\nHost: " + client.DummyHost +
		"\r\nUser-Agent: resident\r\nContent-Type: application/x-tar\r\nTransfer-Encoding: chunked\r\n\r\n")}
	_, werr := io.Copy(cw, body) // body's WriteTo, when it has one
	if werr == nil {
		werr = cw.end()
	}
	resp, rerr := http.ReadResponse(bufio.NewReader(conn), req)
	if rerr != nil {
		if werr != nil {
			return classify(ctx, "write_file: archive upload", werr)
		}
		return classify(ctx, "write_file: archive upload", rerr)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return nil
	}
	var msg struct {
		Message string `json:"message"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&msg)
	// Not not_found for a 404: the staging directory the keeper just made
	// is missing (a sandbox that removed it), not the sandbox.
	kind := protocol.KindTransient
	if resp.StatusCode == http.StatusConflict {
		kind = protocol.KindConflict
	}
	return &protocol.Error{Kind: kind, Msg: fmt.Sprintf("write_file: archive upload: the engine answered %s: %s", resp.Status, msg.Message)}
}

// chunkedBody writes an HTTP/1.1 request's head, then its body in chunked
// transfer coding: each Write one chunk, its size line, bytes and CRLF in
// one vectored write (writev on a unix or TCP connection), so the bytes
// are never copied on the way to the socket.
type chunkedBody struct {
	w    io.Writer
	head []byte // the request's head, not yet written
	line []byte
}

func (c *chunkedBody) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil // an empty chunk would end the body
	}
	c.line = append(strconv.AppendInt(c.line[:0], int64(len(b)), 16), '\r', '\n')
	if err := c.write(c.line, b, crlf); err != nil {
		return 0, err
	}
	return len(b), nil
}

// end writes the last chunk: the body is complete.
func (c *chunkedBody) end() error { return c.write([]byte("0\r\n\r\n")) }

// write writes parts, after the head if it is still to go, in one
// vectored write.
func (c *chunkedBody) write(parts ...[]byte) error {
	bufs := make(net.Buffers, 0, 1+len(parts))
	if len(c.head) > 0 {
		bufs = append(bufs, c.head)
		c.head = nil
	}
	bufs = append(bufs, parts...)
	want := 0
	for _, b := range bufs {
		want += len(b)
	}
	n, err := bufs.WriteTo(c.w)
	if err == nil && n < int64(want) {
		err = io.ErrShortWrite
	}
	return err
}

var crlf = []byte("\r\n")
