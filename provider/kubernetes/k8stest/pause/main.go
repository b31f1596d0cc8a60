// Command pause is the pod sandbox's PID 1 for the test cluster: it sleeps,
// reaps the zombies the kernel hands it, and exits on SIGINT or SIGTERM. No
// registry is reachable there, so .ci/k8s-cluster builds it (static, no cgo)
// and imports it as the cluster's sandbox image.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
