package main

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// forwardPort is the httpd port inside the bench sandbox.
const forwardPort = 8099

// forward measures sandbox/forward_port: a forwarded connection's
// throughput and the setup it adds, against a direct connection to a
// published port of a container (bridge network) when the engine has a
// bridge, and otherwise against the floor of any exec-carried stream, a
// raw exec of cat through the Engine API. Without a bridge it also
// compares with the same busybox httpd on the host's loopback serving the
// same bytes: a connection with no sandbox in the way, so the setup a
// forward adds is measured against a connection, not an exec. Each
// forwarded connection is a stream of the sandbox's keeper channel.
func (b *bench) forward() ([]row, error) {
	size := b.scale(64, 4)
	setup := fmt.Sprintf("mkdir -p /srv/bench && cd /srv/bench && echo ok > small && dd if=/dev/urandom of=big bs=1M count=%d 2>/dev/null", size)
	if err := b.res.exec(b.sandbox, "sh", "-c", setup); err != nil {
		return nil, err
	}
	if _, err := b.res.send("sandbox/exec", execParams(b.sandbox, "httpd", "-f", "-p", "127.0.0.1:"+strconv.Itoa(forwardPort), "-h", "/srv/bench")); err != nil {
		return nil, err
	}
	var fwd struct {
		Address string `json:"address"`
	}
	if err := b.res.call("sandbox/forward_port", map[string]any{"sandbox_id": b.sandbox, "port": forwardPort}, &fwd); err != nil {
		return nil, err
	}
	ours := "http://" + fwd.Address
	if err := awaitHTTP(ours + "/small"); err != nil {
		return nil, err
	}
	direct, label, err := b.directBaseline(setup)
	if err != nil {
		return nil, err
	}
	rows, err := b.forwardAgainst(ours, size, "", label, direct)
	if err != nil || label == "published port" {
		return rows, err
	}
	host, stop, err := b.hostServer(size)
	if err != nil {
		return rows, nil // no busybox on the host: the raw rows stand alone
	}
	defer stop()
	fetchFrom := func(base string) func(string, int64) error {
		return func(name string, n int64) error { return get(base+"/"+name, n) }
	}
	more, err := b.forwardAgainst(ours, size, ", against the host's loopback", "same httpd on the host's loopback", fetchFrom(host))
	if err != nil {
		return nil, err
	}
	rows = append(rows, more...)
	published, stopProxy, err := engineProxy(host)
	if err != nil {
		return rows, nil // no docker-proxy here: the loopback rows stand
	}
	defer stopProxy()
	more, err = b.forwardAgainst(ours, size, ", against a published port's proxy",
		"the engine's docker-proxy in front of that httpd: a published port's path, less the bridge", fetchFrom(published))
	return append(rows, more...), err
}

// forwardAgainst times the forward at ours against fetch (the baseline
// named label), interleaved: a GET of the big file and one of 3 bytes,
// each on a new connection; against names the baseline in the figures.
func (b *bench) forwardAgainst(ours string, size int, against, label string, fetch func(name string, n int64) error) ([]row, error) {
	bytes := int64(size) << 20
	oursBig, baseBig, err := interleaved(b.scale(5, 1), func() error { return get(ours+"/big", bytes) }, func() error { return fetch("big", bytes) })
	if err != nil {
		return nil, err
	}
	oursSmall, baseSmall, err := interleaved(b.scale(50, 5), func() error { return get(ours+"/small", 3) }, func() error { return fetch("small", 3) })
	if err != nil {
		return nil, err
	}
	through, base := mbps(bytes, oursBig.median()), mbps(bytes, baseBig.median())
	added := oursSmall.median() - baseSmall.median()
	setup := "forwarded connection setup" + against
	if against == "" {
		setup += " (GET of 3 bytes)"
	}
	return []row{
		{figure: fmt.Sprintf("forwarded GET of %d MB%s", size, against), ours: fmt.Sprintf("%.0f MB/s", through), raw: fmt.Sprintf("%.0f MB/s (%s)", base, label),
			ratio: fmt.Sprintf("%.2fx", through/base), goal: "≥ 0.7x direct", verdict: verdict(through >= 0.7*base)},
		{figure: setup, ours: medP99(oursSmall), raw: medP99(baseSmall) + " (" + label + ")",
			ratio: "adds " + ms(added), goal: "≤ 2 ms added", verdict: verdict(added <= 2*time.Millisecond)},
	}, nil
}

// engineProxy puts the engine's own userland proxy (docker-proxy, what a
// port published with Docker's default userland-proxy runs through) in
// front of the http server at upstream, on another loopback port. An
// engine without a bridge cannot publish a port, so this is the nearest
// the bench gets to one: the same program and hops, without the bridge's
// veth, which only costs more.
func engineProxy(upstream string) (string, func(), error) {
	bin, err := exec.LookPath("docker-proxy")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/docker-proxy"); serr != nil {
			return "", nil, err
		}
		bin = "/usr/sbin/docker-proxy"
	}
	u, err := url.Parse(upstream)
	if err != nil {
		return "", nil, err
	}
	port, err := freeLoopbackPort()
	if err != nil {
		return "", nil, err
	}
	// docker-proxy reports "0\n" (or "1\n" and why) on fd 3 once it listens.
	ready, signal, err := os.Pipe()
	if err != nil {
		return "", nil, err
	}
	defer ready.Close()
	cmd := exec.Command(bin, "-proto", "tcp", "-host-ip", "127.0.0.1", "-host-port", strconv.Itoa(port),
		"-container-ip", u.Hostname(), "-container-port", u.Port())
	cmd.ExtraFiles = []*os.File{signal}
	err = cmd.Start()
	signal.Close()
	if err != nil {
		return "", nil, err
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	status, _ := io.ReadAll(io.LimitReader(ready, 4096))
	if !strings.HasPrefix(string(status), "0") {
		stop()
		return "", nil, fmt.Errorf("docker-proxy did not start: %q", status)
	}
	addr := "http://127.0.0.1:" + strconv.Itoa(port)
	if err := awaitHTTP(addr + "/small"); err != nil {
		stop()
		return "", nil, err
	}
	return addr, stop, nil
}

// hostServer runs the bench's busybox httpd on the host's loopback over a
// directory holding what the sandbox's holds (small, and big of size MB).
func (b *bench) hostServer(size int) (string, func(), error) {
	dir, err := os.MkdirTemp("", "resident-bench-httpd-")
	if err != nil {
		return "", nil, err
	}
	big := make([]byte, size<<20)
	_, _ = rand.Read(big)
	if err := os.WriteFile(filepath.Join(dir, "small"), []byte("ok\n"), 0o644); err == nil {
		err = os.WriteFile(filepath.Join(dir, "big"), big, 0o644)
	}
	port, perr := freeLoopbackPort()
	if err == nil {
		err = perr
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	cmd := exec.Command(b.busybox, "httpd", "-f", "-p", "127.0.0.1:"+strconv.Itoa(port), "-h", dir)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); os.RemoveAll(dir) }
	addr := "http://127.0.0.1:" + strconv.Itoa(port)
	if err := awaitHTTP(addr + "/small"); err != nil {
		stop()
		return "", nil, err
	}
	return addr, stop, nil
}

// directBaseline is a fetch of a file of the sandbox without the resident:
// over a published port when the engine can publish one, else a raw exec.
func (b *bench) directBaseline(setup string) (func(name string, n int64) error, string, error) {
	if addr, err := b.publishedServer(setup); err == nil {
		return func(name string, n int64) error { return get("http://"+addr+"/"+name, n) }, "published port", nil
	}
	return func(name string, n int64) error {
		_, got, err := b.raw.exec(b.sandbox, []string{"cat", "/srv/bench/" + name})
		if err == nil && got != n {
			err = fmt.Errorf("raw cat %s: %d bytes, want %d", name, got, n)
		}
		return err
	}, "raw exec cat: the engine has no bridge", nil
}

// publishedServer runs httpd in a bridge container with its port published
// on the host's loopback and returns the host address.
func (b *bench) publishedServer(setup string) (string, error) {
	body := map[string]any{"Image": b.image, "Labels": b.rawLabels(),
		"Cmd":          []string{"sh", "-c", setup + " && exec httpd -f -p 8099 -h /srv/bench"},
		"ExposedPorts": map[string]any{"8099/tcp": map[string]any{}},
		"HostConfig": map[string]any{"NetworkMode": "bridge",
			"PortBindings": map[string]any{"8099/tcp": []map[string]string{{"HostIp": "127.0.0.1", "HostPort": ""}}}}}
	data, err := b.raw.want("POST", "/containers/create", body, 201)
	if err != nil {
		return "", err
	}
	var created struct{ Id string }
	if err := json.Unmarshal(data, &created); err != nil {
		return "", err
	}
	if _, err := b.raw.want("POST", "/containers/"+created.Id+"/start", nil, 204); err != nil {
		return "", err
	}
	data, err = b.raw.want("GET", "/containers/"+created.Id+"/json", nil, 200)
	if err != nil {
		return "", err
	}
	var info struct {
		NetworkSettings struct {
			Ports map[string][]struct{ HostIp, HostPort string }
		}
	}
	if err := json.Unmarshal(data, &info); err != nil || len(info.NetworkSettings.Ports["8099/tcp"]) == 0 {
		return "", fmt.Errorf("no published port (%v)", err)
	}
	addr := "127.0.0.1:" + info.NetworkSettings.Ports["8099/tcp"][0].HostPort
	return addr, awaitHTTP("http://" + addr + "/small")
}

var benchHTTP = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// get fetches url on a new connection and checks its length.
func get(url string, n int64) error {
	resp, err := benchHTTP.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.Copy(io.Discard, resp.Body)
	if err == nil && got != n {
		err = fmt.Errorf("%s: %d bytes, want %d", url, got, n)
	}
	return err
}

// awaitHTTP waits (bounded) until url answers: the server starts in the
// background.
func awaitHTTP(url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := get(url, 3)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
