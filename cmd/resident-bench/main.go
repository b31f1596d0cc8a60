// Command resident-bench measures the resident against the floor and the
// usual ways of driving Docker from a host, in one run: it spawns the real
// resident binary over stdio as a host would and compares it with a minimal
// Engine API client on the same socket (raw), the docker CLI, and docker-py
// where installed. Every figure is a median (and p99) over repetitions with
// the warm-up dropped, or a ratio of two figures taken in the same run.
//
//	go run ./cmd/resident-bench            # full mode, for docs/performance.md
//	go run ./cmd/resident-bench --quick    # CI: few repetitions, asserts nothing about timing
//
// It needs a Docker engine on a unix socket (DOCKER_HOST) and a static
// busybox (apt-get install busybox-static) to make its image from nothing.
// Everything it creates carries the residentbench labels and is removed at
// exit, also on SIGINT/SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/provider/docker/dockertest"
)

const (
	tagPrefix = "residentbench"
	ownerKey  = tagPrefix + "-install-id"
	// runLabel is on every container and volume made outside the resident.
	runLabel = "dev.residentbench.run"
)

type bench struct {
	quick        bool
	bin          string // the resident binary
	rawPing      string // the minimal Go program that pings the engine
	echo         string // a child that answers every frame at once: the process-hop floor
	image        string
	busybox      string // the static busybox the image is made of (and the host's httpd of the forward figure)
	stateDir     string
	runID        string
	installID    string
	raw          *rawClient
	python       string
	cli          bool
	res          *residentProc // the long-lived session, credentials registered
	sandbox      string
	payloadReady bool
	pyOps        pyResult
	volumes      []string
	readVolume   string // the read_file figure's volume, once filled
}

func (b *bench) scale(full, quick int) int {
	if b.quick {
		return quick
	}
	return full
}

func (b *bench) rawLabels() map[string]string { return map[string]string{runLabel: b.runID} }

func main() {
	os.Exit(run())
}

func run() int {
	quick := flag.Bool("quick", false, "few repetitions and small payloads (CI); asserts nothing about timing")
	residentBin := flag.String("resident", "", "resident binary to measure (default: build ./cmd/resident, without -race)")
	busybox := flag.String("busybox", dockertest.DefaultBusybox, "static busybox to make the sandbox image from")
	only := flag.String("only", "", "comma-separated figures to run (startup, per-op, exec, create, streaming, concurrent, streaming-rss, read_file, sandbox-read, upload, local-exec, local-per-op, local-upload, local-stream, local-stream-rss, external-exec, shim-exec, kubernetes, forward, local-forward, pool, trials, snapshot); with --profile, workloads (ops, exec, read, upload, stream, heap); default all")
	profileDir := flag.String("profile", "", "instead of the table, serve the session in-process and write pprof profiles of the hot workloads to this directory")
	logPath := flag.String("resident-log", "", "write the residents' debug logs to this file (tracing; it slows every figure)")
	flag.Parse()
	if *logPath != "" {
		f, err := os.Create(*logPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "resident-bench:", err)
			return 1
		}
		defer f.Close()
		residentLog = f
	}

	b := &bench{quick: *quick, runID: fmt.Sprintf("%d-%d", os.Getpid(), time.Now().Unix()%100000)}
	b.installID = "bench-" + b.runID
	sock := socketPath()
	if sock == "" {
		fmt.Fprintln(os.Stderr, "resident-bench: DOCKER_HOST must name a unix socket (unix:///path)")
		return 1
	}
	b.raw = newRawClient(sock)
	if err := b.raw.ping(); err != nil {
		fmt.Fprintln(os.Stderr, "resident-bench: docker engine:", err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "resident-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "resident-bench:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	b.stateDir = filepath.Join(tmp, "state")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			b.sweep()
			os.Exit(130)
		case <-done:
		}
	}()
	defer b.sweep()

	b.busybox = *busybox
	if err := b.setup(tmp, *residentBin, *busybox); err != nil {
		fmt.Fprintln(os.Stderr, "resident-bench: setup:", err)
		return 1
	}
	if *profileDir != "" {
		if err := b.profile(*profileDir, *only); err != nil {
			fmt.Fprintln(os.Stderr, "resident-bench: profile:", err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "resident-bench: profiles written to", *profileDir)
		return 0
	}
	rows, failed := b.measureAll(*only)
	printHeader(b)
	printTable(os.Stdout, rows)
	if failed {
		return 1
	}
	return 0
}

func socketPath() string {
	host := os.Getenv("DOCKER_HOST")
	if host == "" {
		host = "unix:///var/run/docker.sock"
	}
	sock, ok := strings.CutPrefix(host, "unix://")
	if !ok {
		return ""
	}
	return sock
}

func (b *bench) setup(tmp, residentBin, busybox string) error {
	b.bin = residentBin
	if b.bin == "" {
		b.bin = filepath.Join(tmp, "resident")
		build := exec.Command("go", "build", "-o", b.bin, "./cmd/resident")
		build.Dir = moduleRoot()
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/resident: %w", err)
		}
	}
	b.rawPing, b.echo = filepath.Join(tmp, "rawping"), filepath.Join(tmp, "echo")
	build := exec.Command("go", "build", "-o", tmp, "./cmd/resident-bench/internal/rawping", "./cmd/resident-bench/internal/echo")
	build.Dir = moduleRoot()
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build rawping echo: %w", err)
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return err
	}
	defer cli.Close()
	if b.image, _, err = dockertest.ImportBusybox(cli, busybox); err != nil {
		return err
	}
	b.python = findPython()
	b.cli = haveDockerCLI()
	if b.res, err = spawnResident(b.bin, "docker", b.stateDir); err != nil {
		return err
	}
	// Credentials make the scrubber do real work on every byte.
	creds := map[string]string{}
	for i := range 20 {
		creds[fmt.Sprintf("key%02d", i)] = fmt.Sprintf("bench-credential-%02d-9f8e7d6c5b4a", i)
	}
	if err := b.res.initialize(b.installID, creds); err != nil {
		return err
	}
	// 100 concurrent execs need more than the default 512 pids: each
	// running exec's keeper holds about 9 threads.
	b.sandbox, err = b.res.createSandbox(map[string]any{"image": b.image, "pids_limit": 4096})
	return err
}

func moduleRoot() string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "."
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// measureAll runs every figure; one that fails becomes a row saying so.
func (b *bench) measureAll(only string) ([]row, bool) {
	figures := []struct {
		name string
		fn   func() ([]row, error)
	}{
		{"startup", b.startup},
		{"per-op", b.perOp},
		{"exec", b.execTrue},
		{"create", b.createToExec},
		{"streaming", b.streaming},
		{"concurrent", b.concurrent},
		{"streaming-rss", b.streamingRSS},
		{"read_file", b.readFile},
		{"sandbox-read", b.sandboxRead},
		{"upload", b.upload},
		{"local-exec", b.localExec},
		{"local-per-op", b.localPerOp},
		{"local-upload", b.localUpload},
		{"local-stream", b.localStream},
		{"local-stream-rss", b.localStreamRSS},
		{"external-exec", b.externalExec},
		{"shim-exec", b.shimExec},
		{"pool", b.poolHit},
		{"trials", b.trials},
		{"snapshot", b.snapshots},
		{"forward", b.forward},
		{"local-forward", b.localForward},
		{"kubernetes", b.kubernetes},
	}
	var rows []row
	failed := false
	for _, f := range figures {
		if only != "" && !slices.Contains(strings.Split(only, ","), f.name) {
			continue
		}
		start := time.Now()
		got, err := f.fn()
		fmt.Fprintf(os.Stderr, "resident-bench: %s took %s\n", f.name, time.Since(start).Round(time.Millisecond))
		if err != nil {
			fmt.Fprintf(os.Stderr, "resident-bench: %s: %v\n", f.name, err)
			rows = append(rows, row{figure: f.name, ours: "ERROR: " + err.Error()})
			failed = true
			continue
		}
		rows = append(rows, got...)
	}
	return rows, failed
}

func printHeader(b *bench) {
	mode := "full"
	if b.quick {
		mode = "quick (figures are not meaningful)"
	}
	py := b.python
	if py == "" {
		py = "not installed"
	}
	fmt.Printf("resident-bench, %s mode; image %s; docker-py: %s\n\n", mode, b.image, py)
}

// sweep removes everything this run made: the resident's sandboxes (by the
// owner label), raw containers and volumes (by the run label).
func (b *bench) sweep() {
	if b.res != nil {
		_ = b.res.stop()
	}
	for _, label := range []string{ownerKey + "=" + b.installID, runLabel + "=" + b.runID} {
		status, data, err := b.raw.do("GET", "/containers/json?all=1&filters="+labelFilter(label), nil)
		if err != nil || status != 200 {
			continue
		}
		for _, id := range containerIDs(data) {
			if err := b.raw.remove(id); err != nil {
				fmt.Fprintln(os.Stderr, "resident-bench: cleanup:", err)
			}
		}
	}
	for _, v := range b.volumes {
		if _, err := b.raw.want("DELETE", "/volumes/"+v+"?force=1", nil, 204, 404); err != nil {
			fmt.Fprintln(os.Stderr, "resident-bench: cleanup:", err)
		}
	}
}
