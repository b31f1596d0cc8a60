package external

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/providertest"
)

// benchPort is the busybox httpd's port inside the bench sandbox.
const benchPort = 8099

// BenchmarkServedDockerForward carries forwarded connections through the
// external protocol to `resident --serve-provider docker` on the real
// engine, both ways the resident can, side by side in one run: the relay
// (an exec of the keeper's relay per connection, as every external
// provider had) and connection streams (conn/open; the served docker
// opens each as a stream of the sandbox's keeper channel). Each iteration
// alternates: connection setup (a GET of 3 bytes on a new connection) ten
// times each way, then one GET of 64 MB each way. What the resident adds
// on top (its listener and the TCP hop to the host) is the same for both
// and not in these figures. Run with -benchtime=Nx.
func BenchmarkServedDockerForward(b *testing.B) {
	image := engineImage(b)
	p := served(b, "docker", b.TempDir(), nil).(*Provider)
	if !p.described.Connections {
		b.Fatal("the served docker announces no connection streams")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	owner := provider.Owner{Key: providertest.OwnerKey, InstallID: "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	id, err := p.Create(ctx, protocol.Spec{Image: image}, owner, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _, _ = p.Terminate(context.Background(), id) }()
	const size = 64 << 20
	setup := fmt.Sprintf("mkdir -p /srv/bench && cd /srv/bench && echo ok > small && dd if=/dev/urandom of=big bs=1M count=%d 2>/dev/null", size>>20)
	if err := runIn(ctx, p, id, "sh", "-c", setup); err != nil {
		b.Fatal(err)
	}
	httpd, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"httpd", "-f", "-p", "127.0.0.1:" + strconv.Itoa(benchPort), "-h", "/srv/bench"}})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, httpd.Stdout()) }()
	go func() { _, _ = io.Copy(io.Discard, httpd.Stderr()) }()
	stream := func() (io.ReadWriteCloser, func() error, error) {
		c, err := p.DialSandbox(ctx, id, benchPort)
		if err != nil {
			return nil, nil, err
		}
		return c, c.CloseWrite, nil
	}
	relay := func() (io.ReadWriteCloser, func() error, error) {
		proc, err := p.Exec(ctx, id, provider.ExecRequest{Argv: p.RelayCommand(benchPort), Stdin: true})
		if err != nil {
			return nil, nil, err
		}
		go func() { _, _ = io.Copy(io.Discard, proc.Stderr()) }()
		return procConn{proc}, proc.Stdin().Close, nil
	}
	for { // httpd is up once a GET through a stream works
		if err := get(stream, "/small", 3); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			b.Fatal(ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	var setupRelay, setupStream, bigRelay, bigStream []time.Duration
	timed := func(dst *[]time.Duration, open opener, path string, want int64) {
		start := time.Now()
		if err := get(open, path, want); err != nil {
			b.Fatal(err)
		}
		*dst = append(*dst, time.Since(start))
	}
	for b.Loop() {
		for range 10 {
			timed(&setupRelay, relay, "/small", 3)
			timed(&setupStream, stream, "/small", 3)
		}
		timed(&bigRelay, relay, "/big", size)
		timed(&bigStream, stream, "/big", size)
	}
	mbps := func(d time.Duration) float64 { return float64(size) / d.Seconds() / 1e6 }
	b.ReportMetric(float64(median(setupRelay).Microseconds()), "relay-setup-µs")
	b.ReportMetric(float64(median(setupStream).Microseconds()), "stream-setup-µs")
	b.ReportMetric(mbps(median(bigRelay)), "relay-MB/s")
	b.ReportMetric(mbps(median(bigStream)), "stream-MB/s")
	b.ReportMetric(0, "ns/op")
}

type opener func() (io.ReadWriteCloser, func() error, error)

// get fetches path over one new connection and checks the body's length.
func get(open opener, path string, want int64) error {
	c, closeWrite, err := open()
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.0\r\n\r\n"); err != nil {
		return err
	}
	_ = closeWrite()
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 64<<10), nil)
	if err != nil {
		return err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && n != want {
		err = fmt.Errorf("GET %s: %d bytes, want %d", path, n, want)
	}
	return err
}

// procConn is a relay exec as a connection: stdin one way, stdout back.
type procConn struct{ proc provider.Process }

func (c procConn) Read(b []byte) (int, error)  { return c.proc.Stdout().Read(b) }
func (c procConn) Write(b []byte) (int, error) { return c.proc.Stdin().Write(b) }
func (c procConn) Close() error {
	_ = c.proc.Stdin().Close()
	_, _ = io.Copy(io.Discard, c.proc.Stdout())
	_, err := c.proc.Wait()
	return err
}

func runIn(ctx context.Context, p provider.Provider, id string, argv ...string) error {
	proc, err := p.Exec(ctx, id, provider.ExecRequest{Argv: argv})
	if err != nil {
		return err
	}
	out, _ := io.ReadAll(proc.Stderr())
	_, _ = io.Copy(io.Discard, proc.Stdout())
	st, err := proc.Wait()
	if err == nil && st.Code != 0 {
		err = fmt.Errorf("%q exited %d: %s", argv, st.Code, out)
	}
	return err
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
