package k8stest

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RestartDaemon stops one of the cluster's daemons (its pid file under
// RESIDENT_K8S_DIR: "apiserver", "kubelet", ...) and starts it again with
// the same command line, as .ci/k8s-cluster had; for fault tests.
func RestartDaemon(name string) error {
	dir := os.Getenv("RESIDENT_K8S_DIR")
	if dir == "" {
		return fmt.Errorf("RESIDENT_K8S_DIR is not set")
	}
	pidFile := filepath.Join(dir, name+".pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return err
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return err
	}
	argv := strings.Split(string(bytes.TrimRight(cmdline, "\x00")), "\x00")
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	// A daemon an earlier RestartDaemon of this process started is its
	// child: it stays a zombie (which kill 0 still finds) until reaped
	// here. Anyone else's child is reaped by its parent.
	for i := 0; !reaped(pid) && syscall.Kill(pid, 0) == nil; i++ {
		if i > 400 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	log, err := os.OpenFile(filepath.Join(dir, "logs", name+".log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return err
	}
	// It outlives the test (its own session); the cluster's stop ends it,
	// and init reaps it then.
	return cmd.Process.Release()
}

// AwaitAPIServer waits until the API server says it is ready.
func AwaitAPIServer(timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := client.Get("https://127.0.0.1:6443/readyz")
		if err == nil {
			resp.Body.Close()
			// 401 without credentials means it serves; readyz needs no auth
			// here only when it is ready, so any answer but 5xx will do.
			if resp.StatusCode < 500 {
				client.CloseIdleConnections()
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("API server not ready after %s", timeout)
}

// reaped reaps pid if it is this process's child and has ended.
func reaped(pid int) bool {
	got, err := syscall.Wait4(pid, nil, syscall.WNOHANG, nil)
	return err == nil && got == pid
}
