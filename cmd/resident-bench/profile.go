package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/resident"
)

// profile serves the same session in this process (the wiring of
// cmd/resident, over pipes instead of stdio) and records CPU profiles of
// the per-op, exec and streaming workloads and a heap profile under
// concurrent streaming, into dir. Read them with `go tool pprof`.
func (b *bench) profile(dir string) error {
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
		{"stream", func() error {
			for range 4 {
				if err := p.exec(b.sandbox, "cat", payloadFile, payloadFile, payloadFile, payloadFile); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	for _, w := range workloads {
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
	// Heap: sampled while 100 execs stream at once.
	runtime.MemProfileRate = 4096
	var heapErr error
	var once sync.Once
	_, _, err = fanOut(100, func() error {
		err := p.exec(b.sandbox, "cat", payloadFile)
		once.Do(func() {
			f, err := os.Create(filepath.Join(dir, "heap.prof"))
			if err != nil {
				heapErr = err
				return
			}
			heapErr = pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		})
		return err
	})
	if err != nil {
		return err
	}
	return heapErr
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
