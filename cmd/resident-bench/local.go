package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// localResident is a resident on the local provider with one running
// sandbox, for the figures that need no engine.
func (b *bench) localResident() (p *residentProc, sandbox string, cleanup func(), err error) {
	return b.localResidentWith(map[string]any{})
}

// localResidentWith is localResident with the sandbox's spec.
func (b *bench) localResidentWith(spec map[string]any) (p *residentProc, sandbox string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "resident-bench-local-")
	if err != nil {
		return nil, "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	if p, err = spawnResident(b.bin, "local", dir); err != nil {
		cleanup()
		return nil, "", nil, err
	}
	cleanup = func() { _ = p.stop(); _ = os.RemoveAll(dir) }
	creds := map[string]string{}
	for i := range 20 { // the scrubber does real work on every byte
		creds[fmt.Sprintf("key%02d", i)] = fmt.Sprintf("bench-credential-%02d-9f8e7d6c5b4a", i)
	}
	if err = p.initialize(b.installID, creds); err == nil {
		sandbox, err = p.createSandbox(spec)
	}
	if err != nil {
		cleanup()
		return nil, "", nil, err
	}
	return p, sandbox, cleanup, nil
}

// localPerOp: list_owned, read_owner and terminate of a missing id on the
// local provider, interleaved with the process-hop floor (an echo child
// answering the same frame): what is over the floor is the resident's own
// per-op path, as local's provider calls are in-process.
func (b *bench) localPerOp() ([]row, error) {
	p, sandbox, cleanup, err := b.localResident()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	echo, err := spawnEcho(b.echo)
	if err != nil {
		return nil, err
	}
	defer echo.stop()
	missing := "lcl-" + strings.Repeat("0", 16)
	ops := []struct {
		name string
		call func() error
	}{
		{"list_owned", func() error { return p.call("sandbox/list_owned", struct{}{}, nil) }},
		{"read_owner", func() error { return p.call("sandbox/read_owner", map[string]string{"sandbox_id": sandbox}, nil) }},
		// local answers a terminate of an id it does not have as done
		// (terminate is idempotent); either answer is one round trip.
		{"terminate (missing id)", func() error {
			ch, err := p.send("sandbox/terminate", map[string]string{"sandbox_id": missing})
			if err != nil {
				return err
			}
			if _, ok := <-ch; !ok {
				return fmt.Errorf("sandbox/terminate: the resident closed its stdout")
			}
			return nil
		}},
	}
	echoCall := func() error { return echo.call("sandbox/list_owned", struct{}{}, nil) }
	var rows []row
	for _, o := range ops {
		series, err := interleavedN(b.scale(1000, 50), o.call, echoCall)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.name, err)
		}
		ours, hop := series[0], series[1]
		over := ours.median() - hop.median()
		rows = append(rows, row{figure: "extra: local per-op, " + o.name, ours: medP99(ours), raw: medP99(hop) + " (echo child)",
			ratio: us(over) + " median over the hop", goal: "≤ hop + 150 µs median", verdict: verdict(over <= 150*time.Microsecond)})
	}
	return rows, nil
}

// localUpload: a streamed upload of 256 MiB into a local sandbox against
// the same bytes piped into a file by a child (`cat > file`, what
// `docker exec -i` into a file is without the engine), with the resident's
// CPU per GiB.
func (b *bench) localUpload() ([]row, error) {
	p, sandbox, cleanup, err := b.localResident()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	size := b.scale(256, 16) << 20
	chunk := make([]byte, 256<<10)
	for i := range chunk {
		chunk[i] = byte(i*131 + i>>8)
	}
	rawDir, err := os.MkdirTemp("", "resident-bench-pipe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(rawDir)
	var cpu time.Duration
	uploads := 0
	ours, raw, err := interleaved(b.scale(4, 1),
		func() error {
			before, err := cpuTime(p.pid)
			if err == nil {
				err = streamUpload(p, sandbox, "/tmp/resident-bench-up", size, chunk, false)
			}
			after, cerr := cpuTime(p.pid)
			cpu += after - before
			uploads++
			return cmpErr(err, cerr)
		},
		func() error { return pipeIntoFile(filepath.Join(rawDir, "up"), size, chunk) })
	if err != nil {
		return nil, err
	}
	rate := func(s samples) float64 { return mbps(int64(size), s.median()) }
	perGiB := cpu.Seconds() / float64(uploads) / (float64(size) / (1 << 30))
	return []row{{figure: fmt.Sprintf("extra: local streamed upload of %d MiB", size>>20),
		ours: fmt.Sprintf("%.0f MB/s, resident CPU %.2f s/GiB", rate(ours), perGiB), raw: fmt.Sprintf("%.0f MB/s (a child's cat > file)", rate(raw)),
		ratio: fmt.Sprintf("%.2fx raw", rate(ours)/rate(raw)), goal: "≥ 0.8x raw", verdict: verdict(rate(ours) >= 0.8*rate(raw))}}, nil
}

// pipeIntoFile writes size bytes of chunk through a pipe into a child that
// copies its stdin into path.
func pipeIntoFile(path string, size int, chunk []byte) error {
	cmd := exec.Command("sh", "-c", `exec cat > "$0"`, path)
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	for left := size; left > 0 && err == nil; {
		n := min(len(chunk), left)
		_, err = in.Write(chunk[:n])
		left -= n
	}
	cerr := in.Close()
	return cmpErr(cmpErr(err, cerr), cmd.Wait())
}

// cmpErr is the first of two errors.
func cmpErr(err, next error) error {
	if err != nil {
		return err
	}
	return next
}

// localStream: exec output to the host on the local provider with
// scrubbing on (20 credentials), against the same bytes (`head -c` of
// /dev/zero, run by hand) read from a child's pipe; with the resident's CPU
// per GiB streamed. 56 MiB a run: under the 64 MiB output cap.
func (b *bench) localStream() ([]row, error) {
	p, sandbox, cleanup, err := b.localResident()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	size := b.scale(56, 8) << 20
	argv := []string{"head", "-c", fmt.Sprint(size), "/dev/zero"}
	var cpu time.Duration
	runs := 0
	ours, raw, err := interleaved(b.scale(5, 1),
		func() error {
			before, err := cpuTime(p.pid)
			got := p.payload.Load()
			if err == nil {
				err = p.exec(sandbox, argv...)
			}
			after, cerr := cpuTime(p.pid)
			cpu += after - before
			runs++
			if n := p.payload.Load() - got; err == nil && n != int64(size) {
				err = fmt.Errorf("exec output carried %d bytes, not %d", n, size)
			}
			return cmpErr(err, cerr)
		},
		func() error {
			cmd := exec.Command(argv[0], argv[1:]...)
			out, err := cmd.StdoutPipe()
			if err != nil {
				return err
			}
			if err := cmd.Start(); err != nil {
				return err
			}
			n, err := io.Copy(io.Discard, out)
			if err == nil && n != int64(size) {
				err = fmt.Errorf("the pipe carried %d bytes, not %d", n, size)
			}
			return cmpErr(err, cmd.Wait())
		})
	if err != nil {
		return nil, err
	}
	rate := func(s samples) float64 { return mbps(int64(size), s.median()) }
	perGiB := cpu.Seconds() / float64(runs) / (float64(size) / (1 << 30))
	return []row{{figure: "extra: local exec output, scrubbing on",
		ours: fmt.Sprintf("%.0f MB/s, resident CPU %.2f s/GiB", rate(ours), perGiB), raw: fmt.Sprintf("%.0f MB/s (a child's pipe)", rate(raw)),
		ratio: fmt.Sprintf("%.2fx raw", rate(ours)/rate(raw)), goal: "≥ 0.9x raw, ≤ 2 s/GiB", verdict: verdict(rate(ours) >= 0.9*rate(raw) && perGiB <= 2)}}, nil
}
