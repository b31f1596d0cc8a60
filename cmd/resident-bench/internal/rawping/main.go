// Command rawping is resident-bench's start-up floor: the smallest Go
// program that pings the Docker engine on its unix socket and exits. It
// prints its RSS in KiB.
package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
)

func main() {
	sock := strings.TrimPrefix(os.Getenv("DOCKER_HOST"), "unix://")
	if sock == "" {
		sock = "/var/run/docker.sock"
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	resp, err := hc.Get("http://docker/_ping")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	resp.Body.Close()
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fmt.Println(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
		}
	}
}
