package providertest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/resident-dev/resident/provider"
)

// established is what the proxy answers a CONNECT it carries.
const established = "HTTP/1.1 200 Connection established\r\n\r\n"

// netPair is one connection through the sandbox's proxy, both of whose
// ends the test holds without an exec: client is a DialSandbox to the
// proxy's port (the sandbox's client), held the AttachProxy of what the
// proxy holds for it (the upstream the resident dialled). Bytes written
// on one come out of the other through two connections inside the
// sandbox, each with its own flow control.
type netPair struct{ client, held provider.Conn }

// runNetStreams checks provider.Dialer and provider.ProxyAttacher under
// load: many connections at once, a large body each way by hash, and a
// reader that stops holding back its own connection only. The proxy is
// the server inside, so the image needs no tool.
func runNetStreams(t *testing.T, c context.Context, p provider.Provider, id string, proxy *proxyExec) {
	d, okD := p.(provider.Dialer)
	a, okA := p.(provider.ProxyAttacher)
	if !okD || !okA {
		t.Skip("the provider has no provider.Dialer and provider.ProxyAttacher")
	}
	probe, err := d.DialSandbox(c, id, 3999)
	if errors.Is(err, provider.ErrNoDial) {
		t.Skipf("the provider cannot dial here: %v", err)
	}
	if err != nil {
		t.Fatalf("DialSandbox: %v", err)
	}
	_ = probe.Close() // the proxy sees a client that sent nothing: no event

	// pairs opens n pairs: every dial first, then the proxy's events (in
	// whatever order it sends them), then every attach.
	pairs := func(t *testing.T, n int) []netPair {
		t.Helper()
		out := make([]netPair, n)
		index := map[string]int{}
		for i := range out {
			conn, err := d.DialSandbox(c, id, 3999)
			if err != nil {
				t.Fatalf("DialSandbox %d: %v", i, err)
			}
			t.Cleanup(func() { _ = conn.Close() })
			host := fmt.Sprintf("c%d.example", i)
			index[host] = i
			if _, err := fmt.Fprintf(conn, "CONNECT %s:443 HTTP/1.1\r\n\r\n", host); err != nil {
				t.Fatalf("writing CONNECT %d: %v", i, err)
			}
			out[i].client = conn
		}
		for range out {
			ev := proxy.next(t)
			i, ok := index[ev.Host]
			if !ok || out[i].held != nil {
				t.Fatalf("the proxy asked %+v", ev)
			}
			held, err := a.AttachProxy(c, id, ev.ID)
			if err != nil {
				t.Fatalf("AttachProxy %d: %v", i, err)
			}
			t.Cleanup(func() { _ = held.Close() })
			out[i].held = held
		}
		for i, pr := range out {
			head := make([]byte, len(established))
			if _, err := io.ReadFull(pr.client, head); err != nil || string(head) != established {
				t.Fatalf("pair %d: the client read %q, %v", i, head, err)
			}
		}
		return out
	}

	t.Run("fifty_connections_at_once", func(t *testing.T) {
		ps := pairs(t, 50)
		errs := make(chan error, 2*len(ps))
		var wg sync.WaitGroup
		for i, pr := range ps {
			req, answer := fmt.Sprintf("request %d ", i), fmt.Sprintf("answer %d ", i)
			wg.Go(func() { // upstream: read the request to its end, then answer
				got, err := io.ReadAll(pr.held)
				if err == nil && string(got) != req {
					err = fmt.Errorf("upstream %d read %q", i, got)
				}
				if err == nil {
					_, err = io.WriteString(pr.held, answer)
				}
				_ = pr.held.CloseWrite()
				errs <- err
			})
			wg.Go(func() { // client: send, half-close, read the whole answer
				_, err := io.WriteString(pr.client, req)
				if err == nil {
					err = pr.client.CloseWrite()
				}
				got, rerr := io.ReadAll(pr.client)
				if err == nil {
					err = rerr
				}
				if err == nil && string(got) != answer {
					err = fmt.Errorf("client %d read %q", i, got)
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("a_hundred_megabytes_each_way_by_hash", func(t *testing.T) {
		pr := pairs(t, 1)[0]
		const size = 100 << 20
		up, down := body(size, 1), body(size, 2)
		var wg sync.WaitGroup
		var upSum, downSum [32]byte
		var upErr, downErr error
		wg.Go(func() { upSum, upErr = sum(pr.held) })
		wg.Go(func() { downSum, downErr = sum(pr.client) })
		wg.Go(func() { _, _ = pr.client.Write(up); _ = pr.client.CloseWrite() })
		wg.Go(func() { _, _ = pr.held.Write(down); _ = pr.held.CloseWrite() })
		wg.Wait()
		if upErr != nil || upSum != sha256.Sum256(up) {
			t.Fatalf("the upstream read other bytes than the client sent (%v)", upErr)
		}
		if downErr != nil || downSum != sha256.Sum256(down) {
			t.Fatalf("the client read other bytes than the upstream sent (%v)", downErr)
		}
	})

	t.Run("a_reader_that_stops_holds_back_only_its_own", func(t *testing.T) {
		ps := pairs(t, 2)
		stalled, live := ps[0], ps[1]
		const size = 32 << 20 // more than every buffer on the way holds
		data := body(size, 3)
		sent := make(chan error, 1)
		go func() { _, err := stalled.held.Write(data); sent <- err }()
		for i := range 10 {
			msg := bytes.Repeat([]byte{byte('a' + i)}, 64<<10)
			if _, err := live.client.Write(msg); err != nil {
				t.Fatalf("live write %d: %v", i, err)
			}
			got := make([]byte, len(msg))
			if _, err := io.ReadFull(live.held, got); err != nil || !bytes.Equal(got, msg) {
				t.Fatalf("live round %d: %v", i, err)
			}
		}
		select {
		case err := <-sent:
			t.Fatalf("%d bytes to a client that reads nothing were all taken (%v)", size, err)
		default:
		}
		got := make([]byte, size)
		if _, err := io.ReadFull(stalled.client, got); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("the stalled connection, read at last: %v, equal %v", err, bytes.Equal(got, data))
		}
		if err := <-sent; err != nil {
			t.Fatalf("the stalled writer: %v", err)
		}
	})
}

// body is n bytes that differ by seed and do not repeat within a frame.
func body(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed) * 2654435761
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

func sum(r io.Reader) ([32]byte, error) {
	h := sha256.New()
	_, err := io.Copy(h, r)
	return [32]byte(h.Sum(nil)), err
}
