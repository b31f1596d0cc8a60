package docker_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/provider/docker/dockertest"
	"github.com/resident-dev/resident/tests"
)

// privateEngine is a second dockerd started for one test alone, with its
// own data root, exec root, pidfile and socket, so stopping or freezing it
// never disturbs the engine other tests use.
type privateEngine struct {
	t    *testing.T
	dir  string
	host string // unix://…/d.sock
	cmd  *exec.Cmd
	done chan struct{}
	// liveRestore keeps containers running while dockerd is down, as
	// production engines are often configured; without it, stopping the
	// engine stops every container.
	liveRestore bool
}

// startPrivateEngine skips with one line when dockerd is not installed or
// the test is not root (fails under CI=true).
func startPrivateEngine(t *testing.T, liveRestore bool) *privateEngine {
	t.Helper()
	skip := func(msg string) {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: " + msg)
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("dockerd"); err != nil {
		skip("engine fault tests skipped: dockerd is not installed")
	}
	if os.Geteuid() != 0 {
		skip("engine fault tests skipped: starting a private dockerd needs root")
	}
	// A short path: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("/tmp", "rfault-")
	if err != nil {
		t.Fatal(err)
	}
	e := &privateEngine{t: t, dir: dir, host: "unix://" + filepath.Join(dir, "d.sock"), liveRestore: liveRestore}
	t.Cleanup(e.destroy)
	e.start()
	return e
}

func (e *privateEngine) start() {
	e.t.Helper()
	logf, err := os.OpenFile(filepath.Join(e.dir, "dockerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		e.t.Fatal(err)
	}
	defer logf.Close()
	e.cmd = exec.Command("dockerd", "--host", e.host, "--storage-driver=overlay2",
		"--data-root", filepath.Join(e.dir, "data"), "--exec-root", filepath.Join(e.dir, "exec"),
		"--pidfile", filepath.Join(e.dir, "d.pid"), "--iptables=false", "--ip-forward=false", "--bridge=none",
		"--shutdown-timeout=2", "--live-restore="+fmt.Sprint(e.liveRestore))
	e.cmd.Stdout, e.cmd.Stderr = logf, logf
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := e.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(e.cmd, e.done)
	start := time.Now()
	for !e.answers() {
		select {
		case <-e.done:
			log, _ := os.ReadFile(filepath.Join(e.dir, "dockerd.log"))
			e.t.Fatalf("private dockerd exited at start:\n%s", tests.Tail(string(log), 3000))
		default:
		}
		if time.Since(start) > 90*time.Second {
			e.t.Fatal("private dockerd did not answer within 90s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	e.t.Logf("private dockerd (pid %d) up in %s", e.cmd.Process.Pid, time.Since(start).Round(time.Millisecond))
}

func (e *privateEngine) client() *client.Client {
	cli, err := client.New(client.WithHost(e.host), client.WithAPIVersionNegotiation())
	if err != nil {
		e.t.Fatal(err)
	}
	return cli
}

func (e *privateEngine) answers() bool {
	cli, err := client.New(client.WithHost(e.host), client.WithAPIVersionNegotiation())
	if err != nil {
		return false
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	return err == nil
}

func (e *privateEngine) busybox() string {
	e.t.Helper()
	cli := e.client()
	defer cli.Close()
	image, _, err := dockertest.ImportBusybox(cli, dockertest.DefaultBusybox)
	if err != nil {
		e.t.Fatal(err)
	}
	return image
}

func (e *privateEngine) signal(sig syscall.Signal) {
	e.t.Helper()
	if err := e.cmd.Process.Signal(sig); err != nil {
		e.t.Fatalf("signal %v to dockerd: %v", sig, err)
	}
}

// stop ends dockerd (thawing it first), gracefully then forcibly.
func (e *privateEngine) stop() {
	if e.cmd == nil || e.cmd.Process == nil {
		return
	}
	select {
	case <-e.done:
		return
	default:
	}
	_ = e.cmd.Process.Signal(syscall.SIGCONT)
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
		<-e.done
	}
}

func (e *privateEngine) String() string { return fmt.Sprintf("dockerd at %s", e.host) }

// destroy leaves nothing behind: the engine's containers are removed (with
// live-restore they would outlive dockerd), dockerd stops, any process it
// started that survived (containerd, shims, container inits; found by the
// engine's private directory in their command line, killed by pid) is
// killed, its mounts are detached and its directory removed.
func (e *privateEngine) destroy() {
	if e.cmd != nil && e.cmd.Process != nil {
		_ = e.cmd.Process.Signal(syscall.SIGCONT)
	}
	if e.answers() {
		cli := e.client()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		if list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true}); err == nil {
			for _, c := range list.Items {
				_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			}
		}
		cancel()
		cli.Close()
	}
	e.stop()
	for _, pid := range pidsMentioning(e.dir) {
		for _, child := range childrenOf(pid) {
			_ = syscall.Kill(child, syscall.SIGKILL) // a container's init: its namespace goes with it
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	var under []string
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], e.dir) {
			under = append(under, f[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(under)))
	for _, m := range under {
		_ = syscall.Unmount(m, syscall.MNT_DETACH)
	}
	_ = os.RemoveAll(e.dir)
}

func pidsMentioning(s string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && strings.Contains(string(cmdline), s) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func childrenOf(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for _, f := range strings.Fields(string(data)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}
