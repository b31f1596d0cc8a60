package client_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"testing"

	"github.com/resident-dev/resident/client"
	"github.com/resident-dev/resident/protocol"
)

// fakeResident plays the resident's side of a pipe by hand, for what the
// local provider never sends (pull progress) or never does on purpose
// (a frame error).
type fakeResident struct {
	t      testing.TB
	conn   net.Conn
	frames *protocol.FrameReader
}

func newFake(t testing.TB, opts client.Options) (*client.Client, *fakeResident) {
	hostEnd, residentEnd := net.Pipe()
	c := client.Attach(hostEnd, opts)
	t.Cleanup(func() { _ = c.Close() })
	return c, &fakeResident{t: t, conn: residentEnd, frames: protocol.NewFrameReader(bufio.NewReader(residentEnd), 0)}
}

// request reads the next request and returns its id and method.
func (f *fakeResident) request() (json.RawMessage, string) {
	body, err := f.frames.Read()
	if err != nil {
		f.t.Error(err)
		return nil, ""
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		f.t.Error(err)
	}
	return m.ID, m.Method
}

func (f *fakeResident) send(body string) {
	if _, err := f.conn.Write(protocol.AppendFrame(nil, []byte(body))); err != nil {
		f.t.Error(err)
	}
}

func TestPullProgressEvents(t *testing.T) {
	events := make(chan protocol.PullProgress, 8)
	c, fake := newFake(t, client.Options{OnPullProgress: func(p protocol.PullProgress) { events <- p }})
	go func() {
		id, method := fake.request()
		if method != protocol.MethodSandboxCreate {
			t.Errorf("method %s", method)
		}
		fake.send(`{"jsonrpc":"2.0","method":"sandbox/pull_progress","params":{"image":"alpine:3.20","status":"Pulling from library/alpine"}}`)
		fake.send(`{"jsonrpc":"2.0","method":"sandbox/pull_progress","params":{"image":"alpine:3.20","status":"0123456789ab: Downloading","layer":"0123456789ab","phase":"downloading","current":512,"total":1024}}`)
		fake.send(`{"jsonrpc":"2.0","method":"some/future_note","params":{"data":{"not":"base64"}}}`)
		fake.send(`{"id":` + string(id) + `,"result":{"sandbox_id":"box-1"},"jsonrpc":"2.0"}`)
	}()
	id, err := c.Create(ctxT(t), protocol.CreateParams{Spec: protocol.Spec{Image: "alpine:3.20"}})
	if err != nil || id != "box-1" {
		t.Fatalf("create: %q %v", id, err)
	}
	want := []protocol.PullProgress{
		{Image: "alpine:3.20", Status: "Pulling from library/alpine"},
		{Image: "alpine:3.20", Status: "0123456789ab: Downloading", Layer: "0123456789ab", Phase: protocol.PullDownloading, Current: 512, Total: 1024},
	}
	for _, w := range want {
		if got := <-events; got != w {
			t.Fatalf("event %+v, want %+v", got, w)
		}
	}
}

// A null-id error (what the resident sends before exiting 2 on a frame
// error) is matched to no request; the pending call fails when the stream
// ends, with that error in its ExitError.
func TestNullIDErrorThenEnd(t *testing.T) {
	c, fake := newFake(t, client.Options{})
	go func() {
		fake.request()
		fake.send(`{"id":null,"error":{"code":-32700,"message":"frame: header line without a colon","data":{"kind":"invalid_request"}},"jsonrpc":"2.0"}`)
		_ = fake.conn.Close()
	}()
	_, err := c.ListOwned(ctxT(t))
	var exit *client.ExitError
	if !errors.As(err, &exit) || exit.Protocol == nil || exit.Protocol.Code != protocol.CodeParseError {
		t.Fatalf("want an ExitError carrying the null-id error, got %v", err)
	}
}
