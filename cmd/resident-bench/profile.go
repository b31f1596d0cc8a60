package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/resident"

	// The profile serves the Docker provider in this process.
	_ "github.com/resident-dev/resident/provider/docker"
)

// profile serves the same session in this process (the wiring of
// cmd/resident, over pipes instead of stdio) and records CPU profiles of
// the per-op, exec, upload and streaming workloads and a heap profile under
// concurrent streaming, into dir. Read them with `go tool pprof`.
func (b *bench) profile(dir, only string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := b.makePayload(); err != nil {
		return err
	}
	p, err := serveInProcess(b.stateDir)
	if err != nil {
		return err
	}
	defer p.stop()
	if err := p.initialize(b.installID, map[string]string{"token": "bench-credential-0123456789"}); err != nil {
		return err
	}
	if _, err := b.ensureReadVolume(64 << 20); err != nil {
		return err
	}
	missing := strings.Repeat("0", 63) + "1"
	workloads := []struct {
		name string
		fn   func() error
	}{
		{"ops", func() error {
			for range 2000 {
				if err := p.call("sandbox/list_owned", struct{}{}, nil); err != nil {
					return err
				}
				if err := p.call("sandbox/read_owner", map[string]string{"sandbox_id": b.sandbox}, nil); err != nil {
					return err
				}
				if err := p.call("sandbox/terminate", map[string]string{"sandbox_id": missing}, nil); err != nil {
					return err
				}
			}
			return nil
		}},
		{"exec", func() error {
			for range 100 {
				if err := p.exec(b.sandbox, "true"); err != nil {
					return err
				}
			}
			return nil
		}},
		{"read", func() error {
			return p.call("store/read_file", map[string]string{"root": b.readVolume, "path": "big", "stream_id": "profile"}, nil)
		}},
		{"upload", func() error {
			// Sized uploads, as the Go client sends them: the archive path.
			chunk := make([]byte, 256<<10)
			for i := range chunk {
				chunk[i] = byte(i*131 + i>>8)
			}
			for range 4 {
				if err := streamUpload(p, b.sandbox, "/tmp/resident-bench-up", 256<<20, chunk, true); err != nil {
					return err
				}
			}
			return nil
		}},
		{"stream", func() error {
			for range 4 {
				if err := p.exec(b.sandbox, "cat", payloadFile, payloadFile, payloadFile, payloadFile); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	want := func(name string) bool { return only == "" || slices.Contains(strings.Split(only, ","), name) }
	for _, w := range workloads {
		if !want(w.name) {
			continue
		}
		f, err := os.Create(filepath.Join(dir, "cpu-"+w.name+".prof"))
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		err = w.fn()
		pprof.StopCPUProfile()
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", w.name, err)
		}
	}
	if !want("heap") {
		return nil
	}
	// Heap and stacks, taken when half of 100 concurrent streams' output
	// has arrived: the peak, not the tail.
	runtime.MemProfileRate = 4096
	const streams = 100
	before := p.payload.Load()
	var snapErr error
	stop := make(chan struct{})
	snapped := make(chan struct{})
	go func() {
		defer close(snapped)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if p.payload.Load()-before < streams*8<<20/2 {
				continue
			}
			snapErr = writeMemSnapshot(dir)
			return
		}
	}()
	_, _, err = fanOut(streams, func() error { return p.exec(b.sandbox, "cat", payloadFile) })
	close(stop)
	<-snapped
	if err != nil {
		return err
	}
	return snapErr
}

// writeMemSnapshot writes heap.prof and memstats.txt: where the memory of
// a busy resident is.
func writeMemSnapshot(dir string) error {
	f, err := os.Create(filepath.Join(dir, "heap.prof"))
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		return err
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	rss, _ := procStatusKB(os.Getpid(), "VmRSS")
	text := fmt.Sprintf("goroutines %d\nVmRSS %d KiB\nHeapAlloc %d KiB\nHeapInuse %d KiB\nHeapIdle-HeapReleased %d KiB\nStackInuse %d KiB\nSys %d KiB\nNextGC %d KiB\n",
		runtime.NumGoroutine(), rss, m.HeapAlloc>>10, m.HeapInuse>>10, (m.HeapIdle-m.HeapReleased)>>10, m.StackInuse>>10, m.Sys>>10, m.NextGC>>10)
	return os.WriteFile(filepath.Join(dir, "memstats.txt"), []byte(text), 0o644)
}

// serveInProcess runs resident.Serve with the docker provider over pipes.
func serveInProcess(stateDir string) (*residentProc, error) {
	notifier := &resident.Notifier{}
	prov, err := provider.Open("docker", provider.Config{StateDir: stateDir, Logger: zap.NewNop(), Notify: notifier.Notify})
	if err != nil {
		return nil, err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- resident.Serve(context.Background(), pipeConn{inR, outW}, resident.Options{
			Provider: prov, Scrubber: hardening.New(), Logger: zap.NewNop(), Limits: resident.DefaultLimits(), Notifier: notifier,
		})
		outW.Close()
		prov.Close()
	}()
	return newResidentProc(os.Getpid(), inW, outR, func() error { return <-done }, func() {}), nil
}

type pipeConn struct {
	*io.PipeReader
	*io.PipeWriter
}

func (c pipeConn) Close() error {
	c.PipeReader.Close()
	return c.PipeWriter.Close()
}
