package main

import (
	"fmt"
	"net"
	"strconv"
	"time"
)

// localForward measures sandbox/forward_port on local, whose forwarded
// connections are each one exec of the keeper's relay over the sandbox's
// channel. The sandbox has spec.network "host", so the server its exec
// starts (the host's static busybox httpd, the server the Docker figure
// uses) listens on the host's loopback too: the direct figure is the same
// server, the same bytes, reached without the forward.
func (b *bench) localForward() ([]row, error) {
	res, sandbox, cleanup, err := b.localResidentWith(map[string]any{"network": "host"})
	if err != nil {
		return nil, err
	}
	defer cleanup()
	port, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	size := b.scale(64, 4)
	setup := fmt.Sprintf("mkdir -p /srv/bench && cd /srv/bench && echo ok > small && head -c %d /dev/urandom > big", size<<20)
	if err := res.exec(sandbox, "sh", "-c", setup); err != nil {
		return nil, err
	}
	if _, err := res.send("sandbox/exec", execParams(sandbox, "busybox", "httpd", "-f", "-p", "127.0.0.1:"+strconv.Itoa(port), "-h", "/srv/bench")); err != nil {
		return nil, err
	}
	var fwd struct {
		Address string `json:"address"`
	}
	if err := res.call("sandbox/forward_port", map[string]any{"sandbox_id": sandbox, "port": port}, &fwd); err != nil {
		return nil, err
	}
	ours, direct := "http://"+fwd.Address, "http://127.0.0.1:"+strconv.Itoa(port)
	if err := awaitHTTP(ours + "/small"); err != nil {
		return nil, err
	}
	bytes := int64(size) << 20
	oursBig, directBig, err := interleaved(b.scale(7, 1), func() error { return get(ours+"/big", bytes) }, func() error { return get(direct+"/big", bytes) })
	if err != nil {
		return nil, err
	}
	oursSmall, directSmall, err := interleaved(b.scale(100, 5), func() error { return get(ours+"/small", 3) }, func() error { return get(direct+"/small", 3) })
	if err != nil {
		return nil, err
	}
	through, base := mbps(bytes, oursBig.median()), mbps(bytes, directBig.median())
	added := oursSmall.median() - directSmall.median()
	return []row{
		{figure: fmt.Sprintf("local: forwarded GET of %d MB", size), ours: fmt.Sprintf("%.0f MB/s", through), raw: fmt.Sprintf("%.0f MB/s (same httpd, direct)", base),
			ratio: fmt.Sprintf("%.2fx", through/base), goal: "≥ 0.7x direct", verdict: verdict(through >= 0.7*base)},
		{figure: "local: forwarded connection setup (GET of 3 bytes)", ours: medP99(oursSmall), raw: medP99(directSmall) + " (same httpd, direct)",
			ratio: "adds " + ms(added), goal: "≤ 2 ms added", verdict: verdict(added <= 2*time.Millisecond)},
	}, nil
}

// freeLoopbackPort is a port of 127.0.0.1 nothing listens on now.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
