package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/resident-dev/resident/protocol"
)

// pair is two ends wired to each other as the protocol does: every message
// goes through JSON, in order, on one "read loop" per direction.
type pair struct {
	a, b   *ConnEnd
	doneA  chan struct{}
	doneB  chan struct{}
	loopAB chan msg
	loopBA chan msg
}

type msg struct {
	method string
	body   []byte
}

func newPair(t *testing.T, window int64) *pair {
	t.Helper()
	p := &pair{doneA: make(chan struct{}), doneB: make(chan struct{}), loopAB: make(chan msg, 1<<16), loopBA: make(chan msg, 1<<16)}
	sender := func(ch chan msg) Sender { return chanSender(ch) }
	var onceA, onceB sync.Once
	p.a = NewConnEnd("c1", window, sender(p.loopAB), func() { onceA.Do(func() { close(p.doneA) }) })
	p.b = NewConnEnd("c1", window, sender(p.loopBA), func() { onceB.Do(func() { close(p.doneB) }) })
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); loop(p.loopAB, p.b) }()
	go func() { defer wg.Done(); loop(p.loopBA, p.a) }()
	t.Cleanup(func() { close(p.loopAB); close(p.loopBA); wg.Wait() })
	return p
}

// chanSender sends JSON as it would go on the wire, data frames as their
// bytes.
type chanSender chan msg

func (ch chanSender) Notify(method string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ch <- msg{method, body}
	return nil
}

func (ch chanSender) Data(_ string, data []byte) error {
	ch <- msg{"data", append([]byte{}, data...)}
	return nil
}

// loop is a read loop: it decodes each message and hands it to end.
func loop(ch chan msg, end *ConnEnd) {
	for m := range ch {
		switch m.method {
		case "data":
			_ = end.Deliver(ConnData{ConnID: end.ID, Data: m.body})
		case NotifyConnData:
			var d ConnData
			_ = json.Unmarshal(m.body, &d)
			_ = end.Deliver(d)
		case NotifyConnCredit:
			var c ConnCredit
			_ = json.Unmarshal(m.body, &c)
			end.Grant(c.Bytes)
		case NotifyConnClose:
			var c ConnClose
			_ = json.Unmarshal(m.body, &c)
			var err error = ErrConnReset
			if c.Error != nil {
				err = c.Error.Data.Error(c.Error.Message)
			}
			end.Reset(err)
		}
	}
}

func TestConnEndBothWaysWithHalfCloses(t *testing.T) {
	p := newPair(t, 64<<10)
	up, down := bytes.Repeat([]byte("up-"), 1<<20), bytes.Repeat([]byte("down-"), 1<<20)
	var wg sync.WaitGroup
	var gotA, gotB []byte
	var errA, errB error
	wg.Go(func() { gotB, errB = io.ReadAll(p.b) })
	wg.Go(func() { gotA, errA = io.ReadAll(p.a) })
	wg.Go(func() { _, _ = p.a.Write(up); _ = p.a.CloseWrite() })
	wg.Go(func() { _, _ = p.b.Write(down); _ = p.b.CloseWrite() })
	wg.Wait()
	if errA != nil || errB != nil || sha256.Sum256(gotB) != sha256.Sum256(up) || sha256.Sum256(gotA) != sha256.Sum256(down) {
		t.Fatalf("errors %v %v; equal %v %v", errA, errB, bytes.Equal(gotB, up), bytes.Equal(gotA, down))
	}
	<-p.doneA
	<-p.doneB
}

func TestConnEndResetReachesTheOtherSideWithItsKind(t *testing.T) {
	p := newPair(t, 0)
	p.a.CloseWith(protocol.Errorf(protocol.KindNotFound, "gone"))
	_, err := p.b.Read(make([]byte, 1))
	if protocol.KindOf(err) != protocol.KindNotFound {
		t.Fatalf("read after the reset: %v", err)
	}
	if _, err := p.b.Write([]byte("x")); protocol.KindOf(err) != protocol.KindNotFound {
		t.Fatalf("write after the reset: %v", err)
	}
	if _, err := p.a.Write([]byte("x")); err == nil {
		t.Fatal("a write on a closed end went through")
	}
	<-p.doneA
	<-p.doneB
}

// A writer with no credit waits, and its Close ends the wait.
func TestConnEndCloseEndsAWriterWaitingForCredit(t *testing.T) {
	p := newPair(t, 4<<10)
	wrote := make(chan error, 1)
	go func() { _, err := p.a.Write(make([]byte, 1<<20)); wrote <- err }()
	_ = p.b // b reads nothing: a waits after its window
	_ = p.a.Close()
	if err := <-wrote; err == nil {
		t.Fatal("the write finished with no reader")
	}
}

func TestConnEndDataPastTheWindowResetsTheConnection(t *testing.T) {
	sent := make(chan msg, 4)
	end := NewConnEnd("c9", 8, chanSender(sent), func() {})
	if err := end.Deliver(ConnData{ConnID: "c9", Data: []byte("12345678")}); err != nil {
		t.Fatalf("a full window: %v", err)
	}
	if err := end.Deliver(ConnData{ConnID: "c9", Data: []byte("9")}); err == nil {
		t.Fatal("data past the window was taken")
	}
	m := <-sent
	var c ConnClose
	if err := json.Unmarshal(m.body, &c); err != nil || m.method != NotifyConnClose || c.Error == nil || c.Error.Data.Kind != protocol.KindTransient {
		t.Fatalf("the other side was told %s %s", m.method, m.body)
	}
	if _, err := end.Read(make([]byte, 1)); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("read after the reset: %v", err)
	}
}

func TestConnOpenParamsCheck(t *testing.T) {
	for _, p := range []ConnOpenParams{
		{SandboxID: "s", Port: 1},
		{ConnID: "c", Port: 1},
		{ConnID: "c", SandboxID: "s"},
		{ConnID: "c", SandboxID: "s", Port: 1, ProxyID: "p"},
		{ConnID: "c", SandboxID: "s", Port: 70000},
		{ConnID: "c", SandboxID: "s", Port: -1},
	} {
		if protocol.KindOf(p.Check()) != protocol.KindInvalidRequest {
			t.Errorf("%+v: %v", p, p.Check())
		}
	}
	for _, p := range []ConnOpenParams{{ConnID: "c", SandboxID: "s", Port: 8080}, {ConnID: "c", SandboxID: "s", ProxyID: "p1"}} {
		if err := p.Check(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
