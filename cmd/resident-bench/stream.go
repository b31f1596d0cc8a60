package main

import (
	"fmt"
	"strconv"
	"time"
)

// payloadFile is base64 text made in the sandbox: output shaped like logs,
// which is harder on the scrubber than zeros or random bytes.
const payloadFile = "/tmp/payload"

func (b *bench) makePayload() error {
	if b.payloadReady {
		return nil
	}
	// 6 MiB of random bytes as base64: about 8.2 MB of text.
	if err := b.res.exec(b.sandbox, "sh", "-c", "head -c 6291456 /dev/urandom | base64 > "+payloadFile); err != nil {
		return err
	}
	b.payloadReady = true
	return nil
}

// streaming: exec output from cat of the payload, repeated, to the host,
// with the scrubber on (credentials registered), against a resident with
// no credentials (token patterns only), raw, the CLI and docker-py.
func (b *bench) streaming() ([]row, error) {
	if err := b.makePayload(); err != nil {
		return nil, err
	}
	// 7 copies, about 57 MB: under the 64 MiB output cap of a stream, past
	// which the resident counts bytes and drops them.
	copies := b.scale(7, 4)
	argv := []string{"cat"}
	for range copies {
		argv = append(argv, payloadFile)
	}
	plain, err := spawnResident(b.bin, "docker", b.stateDir)
	if err != nil {
		return nil, err
	}
	defer plain.stop()
	if err := plain.initialize(b.installID, nil); err != nil {
		return nil, err
	}
	runs := b.scale(5, 2)
	var on, off, raw samples
	var bytes, rawBytes, chunks int64
	var cpu time.Duration
	for i := range runs + 1 {
		cpuBefore, _ := cpuTime(b.res.pid)
		before, chunksBefore := b.res.payload.Load(), b.res.chunks.Load()
		t := time.Now()
		if err := b.res.exec(b.sandbox, argv...); err != nil {
			return nil, err
		}
		on = append(on, time.Since(t))
		bytes = b.res.payload.Load() - before
		chunks = b.res.chunks.Load() - chunksBefore
		if cpuAfter, err := cpuTime(b.res.pid); err == nil && i > 0 {
			cpu += cpuAfter - cpuBefore
		}
		t = time.Now()
		if err := plain.exec(b.sandbox, argv...); err != nil {
			return nil, err
		}
		off = append(off, time.Since(t))
		t = time.Now()
		_, n, err := b.raw.exec(b.sandbox, argv)
		if err != nil {
			return nil, err
		}
		raw = append(raw, time.Since(t))
		rawBytes = n
	}
	on, off, raw = on[1:], off[1:], raw[1:]
	if bytes != rawBytes {
		return nil, fmt.Errorf("the resident delivered %d bytes, the engine %d", bytes, rawBytes)
	}
	rate := func(s samples) float64 { return mbps(bytes, s.median()) }
	cpuPerGB := time.Duration(float64(cpu) / float64(int64(runs)*bytes) * 1e9)
	r := row{figure: fmt.Sprintf("exec output to the host, scrubber on (%d MB, %d KB a chunk; resident CPU %s per GB)", bytes>>20, bytes/max(chunks, 1)>>10, cpuPerGB.Round(time.Millisecond)),
		ours:  fmt.Sprintf("%.0f MB/s", rate(on)),
		raw:   fmt.Sprintf("%.0f MB/s", rate(raw)),
		ratio: fmt.Sprintf("%.2fx raw; %.2fx of no-credentials resident (%.0f MB/s)", rate(on)/rate(raw), rate(on)/rate(off), rate(off)),
		goal:  "≥ 400 MB/s; ≥ 0.8x scrubbing off"}
	r.verdict = verdict(rate(on) >= 400 && rate(on) >= 0.8*rate(off))
	if b.cli {
		cli, err := timed(b.scale(3, 1), dockerCLI(append([]string{"exec", b.sandbox}, argv...)))
		if err != nil {
			return nil, err
		}
		r.cli = fmt.Sprintf("%.0f MB/s", rate(cli))
	}
	py, err := runPython(b.python, map[string]any{"mode": "stream", "n": b.scale(3, 1), "container": b.sandbox, "argv": argv})
	if err != nil {
		return nil, err
	}
	if py != nil {
		r.py = fmt.Sprintf("%.0f MB/s", mbps(py.int("bytes"), py.samples("stream").median()))
	}
	return []row{r}, nil
}

// streamingRSS: a fresh resident's peak RSS while n execs stream at once.
func (b *bench) streamingRSS() ([]row, error) {
	if err := b.makePayload(); err != nil {
		return nil, err
	}
	n := b.scale(100, 20)
	p, err := spawnResident(b.bin, "docker", b.stateDir)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	if err := p.initialize(b.installID, map[string]string{"token": "bench-credential-0123456789"}); err != nil {
		return nil, err
	}
	// All n execs are started first and wait at a gate, then stream at
	// once: started while others already stream, the last exec starts took
	// the engine over the provider's 30 s bound on two cores, and the
	// figure is the resident's memory with n streams open, not how fast
	// the engine starts execs under load.
	// The gate is a FIFO: each shell blocks opening it, without polling,
	// until the bench opens it for writing, which lets all of them through.
	gate := "/tmp/resident-bench-gate-" + strconv.FormatInt(execSeq.Add(1), 10)
	if _, _, err := b.raw.exec(b.sandbox, []string{"mkfifo", gate}); err != nil {
		return nil, err
	}
	defer b.raw.exec(b.sandbox, []string{"rm", "-f", gate})
	out := "cat " + payloadFile
	if b.quick {
		out = "head -c 1048576 " + payloadFile
	}
	argv := []string{"sh", "-c", "read -r _ < " + gate + "; exec " + out}
	type result struct {
		wall time.Duration
		err  error
	}
	done := make(chan result, 1)
	go func() {
		wall, _, err := fanOut(n, func() error { return p.exec(b.sandbox, argv...) })
		done <- result{wall, err}
	}()
	if err := b.raw.awaitWaiting(b.sandbox, gate, n, func() bool { return len(done) > 0 }); err != nil {
		return nil, err
	}
	released := time.Now()
	// One writer's open and close lets every reader's open through; each
	// read then ends at EOF or with the one line.
	if _, _, err := b.raw.exec(b.sandbox, []string{"sh", "-c", "echo > " + gate}); err != nil {
		return nil, err
	}
	res := <-done
	wall := time.Since(released)
	if res.err != nil {
		return nil, res.err
	}
	hwm, err := procStatusKB(p.pid, "VmHWM")
	if err != nil {
		return nil, err
	}
	r := row{figure: fmt.Sprintf("peak RSS, %d concurrent streaming execs (%d MB in %s)", n, p.payload.Load()>>20, wall.Round(time.Millisecond)),
		ours: mb(hwm), goal: "≤ 30 MB", verdict: verdict(hwm <= 30*1024)}
	return []row{r}, nil
}

// readFile: store/read_file of one big file from a volume, no sandbox
// running, against the engine's archive endpoint on a created (not
// started) container mounting the volume.
func (b *bench) readFile() ([]row, error) {
	size := b.scale(256, 16) << 20
	vol, err := b.ensureReadVolume(size)
	if err != nil {
		return nil, err
	}
	roMount := []map[string]any{{"Type": "volume", "Source": vol, "Target": "/vol", "ReadOnly": true}}
	var got int64
	ours, raw, err := interleaved(b.scale(4, 1),
		func() error {
			before := b.res.payload.Load()
			err := b.res.call("store/read_file", map[string]string{"root": vol, "path": "big", "stream_id": "s" + strconv.FormatInt(execSeq.Add(1), 10)}, nil)
			if got = b.res.payload.Load() - before; err == nil && got != int64(size) {
				err = fmt.Errorf("read_file delivered %d bytes, not %d", got, size)
			}
			return err
		},
		func() error {
			id, err := b.raw.runContainer(b.image, b.rawLabels(), []string{"true"}, roMount, false)
			if err != nil {
				return err
			}
			defer b.raw.remove(id)
			n, err := b.raw.archiveCount(id, "/vol/big")
			if err == nil && n != int64(size) {
				err = fmt.Errorf("archive delivered %d bytes, not %d", n, size)
			}
			return err
		})
	if err != nil {
		return nil, err
	}
	rate := func(s samples) float64 { return mbps(int64(size), s.median()) }
	r := row{figure: fmt.Sprintf("store/read_file of %d MiB, no sandbox running", size>>20),
		ours: fmt.Sprintf("%.0f MB/s", rate(ours)), raw: fmt.Sprintf("%.0f MB/s (archive)", rate(raw)),
		ratio: fmt.Sprintf("%.2fx raw", rate(ours)/rate(raw)), goal: "≥ 0.8x raw archive streaming", verdict: verdict(rate(ours) >= 0.8*rate(raw))}
	return []row{r}, nil
}

// ensureReadVolume makes a store volume holding "big", size random bytes.
func (b *bench) ensureReadVolume(size int) (string, error) {
	if b.readVolume != "" {
		return b.readVolume, nil
	}
	vol := "residentbench-" + b.runID
	if _, err := b.raw.want("POST", "/volumes/create", map[string]any{"Name": vol, "Labels": map[string]string{
		"dev.resident.managed": "true", "dev.resident.role": "store", "dev.resident.provider-version": "0.1.0", runLabel: b.runID,
		ownerKey: b.installID}}, 201); err != nil { // volumes are owner-scoped: this install's, as create would label it
		return "", err
	}
	b.volumes = append(b.volumes, vol)
	mount := []map[string]any{{"Type": "volume", "Source": vol, "Target": "/vol"}}
	fill, err := b.raw.runContainer(b.image, b.rawLabels(), []string{"sh", "-c", "head -c " + strconv.Itoa(size) + " /dev/urandom > /vol/big"}, mount, true)
	if err == nil {
		err = b.raw.wait(fill)
	}
	_ = b.raw.remove(fill)
	if err != nil {
		return "", err
	}
	b.readVolume = vol
	return vol, nil
}
