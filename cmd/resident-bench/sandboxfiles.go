package main

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// sandboxRead: sandbox/read_file of one big file out of the running
// sandbox, against the engine's archive endpoint (GET) on the same
// container, which reads as the engine's root and wraps the file in tar.
func (b *bench) sandboxRead() ([]row, error) {
	size := b.scale(256, 16) << 20
	const path = "/tmp/resident-bench-read"
	if err := b.res.exec(b.sandbox, "sh", "-c", "head -c "+strconv.Itoa(size)+" /dev/urandom > "+path); err != nil {
		return nil, err
	}
	cpu, rawCPU := cpuShare{engine: enginePid()}, cpuShare{engine: enginePid()}
	var ours, raw, floor samples
	series, err := interleavedN(b.scale(4, 1),
		func() error {
			before := b.res.payload.Load()
			done := cpu.start(b.res.pid)
			err := b.res.call("sandbox/read_file", map[string]string{"sandbox_id": b.sandbox, "path": path, "stream_id": "s" + strconv.FormatInt(execSeq.Add(1), 10)}, nil)
			done(int64(size))
			if got := b.res.payload.Load() - before; err == nil && got != int64(size) {
				err = fmt.Errorf("sandbox/read_file delivered %d bytes, not %d", got, size)
			}
			return err
		},
		func() error {
			done := rawCPU.start(0)
			n, err := b.raw.archiveCount(b.sandbox, path)
			done(n)
			if err == nil && n != int64(size) {
				err = fmt.Errorf("archive delivered %d bytes, not %d", n, size)
			}
			return err
		},
		// The floor of a file carried on an exec's stream, as the
		// provider carries it today: raw `cat` through the Engine API.
		func() error {
			_, n, err := b.raw.exec(b.sandbox, []string{"cat", path})
			if err == nil && n != int64(size) {
				err = fmt.Errorf("exec cat delivered %d bytes, not %d", n, size)
			}
			return err
		})
	if err != nil {
		return nil, err
	}
	ours, raw, floor = series[0], series[1], series[2]
	rate := func(s samples) float64 { return mbps(int64(size), s.median()) }
	return []row{{figure: fmt.Sprintf("sandbox/read_file of %d MiB from a running sandbox (%s; raw: %s)", size>>20, cpu, rawCPU),
		ours: fmt.Sprintf("%.0f MB/s", rate(ours)), raw: fmt.Sprintf("%.0f MB/s (GET archive)", rate(raw)),
		ratio: fmt.Sprintf("%.2fx raw; raw exec `cat` %.0f MB/s (%.2fx of it)", rate(ours)/rate(raw), rate(floor), rate(ours)/rate(floor)),
		goal:  "≥ 0.8x raw archive", verdict: verdict(rate(ours) >= 0.8*rate(raw))}}, nil
}

// upload: a streamed sandbox/write_file (upload/data, 256 KiB chunks, four
// in flight, as the client sends them) against the engine's archive
// endpoint (PUT, a tar of the one file) into the same running sandbox.
func (b *bench) upload() ([]row, error) {
	size := b.scale(256, 16) << 20
	chunk := make([]byte, 256<<10)
	for i := range chunk {
		chunk[i] = byte(i*131 + i>>8)
	}
	cpu, rawCPU := cpuShare{engine: enginePid()}, cpuShare{engine: enginePid()}
	series, err := interleavedN(b.scale(4, 1),
		func() error {
			done := cpu.start(b.res.pid)
			defer done(int64(size))
			return streamUpload(b.res, b.sandbox, "/tmp/resident-bench-up", size, chunk, true)
		},
		func() error {
			done := rawCPU.start(0)
			defer done(int64(size))
			return b.raw.putArchive(b.sandbox, "/tmp", "resident-bench-raw", size, chunk)
		},
		// The floor of a file carried on an exec's stdin, as the provider
		// carries it today: raw `cat > file` through the Engine API.
		func() error {
			return b.raw.execStdin(b.sandbox, []string{"sh", "-c", "cat > /tmp/resident-bench-exec"}, size, chunk)
		},
		// The same upload without its size: the keeper channel's path.
		func() error { return streamUpload(b.res, b.sandbox, "/tmp/resident-bench-unsized", size, chunk, false) })
	if err != nil {
		return nil, err
	}
	ours, raw, floor, unsized := series[0], series[1], series[2], series[3]
	rate := func(s samples) float64 { return mbps(int64(size), s.median()) }
	return []row{{figure: fmt.Sprintf("streamed upload of %d MiB into a running sandbox (%s; raw: %s)", size>>20, cpu, rawCPU),
		ours: fmt.Sprintf("%.0f MB/s", rate(ours)), raw: fmt.Sprintf("%.0f MB/s (PUT archive)", rate(raw)),
		ratio: fmt.Sprintf("%.2fx raw; raw exec `cat > file` %.0f MB/s (%.2fx of it); without size (the channel) %.0f MB/s (%.2fx raw)", rate(ours)/rate(raw), rate(floor), rate(ours)/rate(floor), rate(unsized), rate(unsized)/rate(raw)),
		goal:  "≥ 0.8x raw archive", verdict: verdict(rate(ours) >= 0.8*rate(raw))}}, nil
}

// streamUpload writes size bytes (chunk over and over) to path in sandbox
// through p as a streamed sandbox/write_file; sized announces the size, as
// the Go client does for a file and raw's tar header does (the resident
// may then take the engine's archive endpoint).
func streamUpload(p *residentProc, sandbox, path string, size int, chunk []byte, sized bool) error {
	stream := "u" + strconv.FormatInt(execSeq.Add(1), 10)
	params := map[string]any{"sandbox_id": sandbox, "path": path, "stream_id": stream}
	if sized {
		params["size"] = size
	}
	write, err := p.send("sandbox/write_file", params)
	if err != nil {
		return err
	}
	var inFlight []<-chan response
	for sent := 0; sent < size; {
		n := min(len(chunk), size-sent)
		sent += n
		ch, err := p.sendData("upload/data", `"stream_id":"`+stream+`","eof":`+strconv.FormatBool(sent == size), chunk[:n])
		if err != nil {
			return err
		}
		inFlight = append(inFlight, ch)
		for len(inFlight) >= 4 || (sent == size && len(inFlight) > 0) {
			if err := awaitResult("upload/data", inFlight[0], nil); err != nil {
				return err
			}
			inFlight = inFlight[1:]
		}
	}
	var res struct {
		Bytes int64 `json:"bytes"`
	}
	if err := awaitResult("sandbox/write_file", write, &res); err != nil {
		return err
	}
	if res.Bytes != int64(size) {
		return fmt.Errorf("write_file wrote %d bytes, not %d", res.Bytes, size)
	}
	return nil
}

// putArchive extracts a tar of one file of size bytes into dir.
func (r *rawClient) putArchive(id, dir, name string, size int, chunk []byte) error {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(size), Typeflag: tar.TypeReg})
		for left := size; err == nil && left > 0; {
			n := min(len(chunk), left)
			_, err = tw.Write(chunk[:n])
			left -= n
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequest("PUT", apiPrefix+"/containers/"+id+"/archive?path="+dir, pr)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-tar")
	resp, err := r.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("PUT archive: %s", resp.Status)
	}
	return nil
}

// cpuShare sums the CPU the resident, the host (this process) and the
// engine (dockerd, with the helpers it reaped) spent on the measured side
// of a figure, per GiB moved: unlike a rate, it hardly moves with the load
// of a shared machine, and the three together say what two cores can
// carry at most.
type cpuShare struct {
	engine                   int // dockerd's pid; 0 not measured
	resident, host, engineCP time.Duration
	bytes                    int64
}

// start begins one measured call (pid 0: no resident, a raw series); the
// func it returns ends it, counting n bytes moved.
func (c *cpuShare) start(pid int) func(n int64) {
	r0, errR := residentCPU(pid)
	h0, errH := cpuTime(os.Getpid())
	e0, errE := engineCPU(c.engine)
	return func(n int64) {
		r1, errR1 := residentCPU(pid)
		h1, errH1 := cpuTime(os.Getpid())
		e1, errE1 := engineCPU(c.engine)
		if errR != nil || errH != nil || errR1 != nil || errH1 != nil || errE != nil || errE1 != nil {
			return
		}
		c.resident += r1 - r0
		c.host += h1 - h0
		c.engineCP += e1 - e0
		c.bytes += n
	}
}

func residentCPU(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, nil
	}
	return cpuTime(pid)
}

func engineCPU(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, nil
	}
	return cpuTimeWithChildren(pid)
}

func (c cpuShare) String() string {
	if c.bytes == 0 {
		return "CPU not measured"
	}
	perGiB := func(d time.Duration) float64 { return d.Seconds() * float64(1<<30) / float64(c.bytes) }
	var parts []string
	if c.resident > 0 {
		parts = append(parts, fmt.Sprintf("resident CPU %.2f s/GiB", perGiB(c.resident)))
	}
	parts = append(parts, fmt.Sprintf("host %.2f s/GiB", perGiB(c.host)))
	if c.engine != 0 {
		parts = append(parts, fmt.Sprintf("dockerd %.2f s/GiB", perGiB(c.engineCP)))
	}
	return strings.Join(parts, ", ")
}

// enginePid is the pid of the dockerd serving DOCKER_HOST's socket, found
// by its --host flag (a private engine's, as .ci/docker-engine starts it);
// 0 when none names it.
func enginePid() int {
	sock := socketPath()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(cmd), "\x00")
		if len(args) == 0 || filepath.Base(args[0]) != "dockerd" {
			continue
		}
		for _, a := range args {
			if strings.HasSuffix(a, sock) && sock != "" {
				return pid
			}
		}
	}
	return 0
}

// execStdin runs argv with size bytes (chunk over and over) on its stdin,
// then closes it and reads the exec's stream to its end.
func (r *rawClient) execStdin(id string, argv []string, size int, chunk []byte) error {
	data, err := r.want("POST", "/containers/"+id+"/exec", map[string]any{"Cmd": argv, "AttachStdin": true, "AttachStdout": true, "AttachStderr": true}, 201)
	if err != nil {
		return err
	}
	var created struct{ Id string }
	if err := json.Unmarshal(data, &created); err != nil {
		return err
	}
	body, err := r.hijack("/exec/"+created.Id+"/start", `{"Detach":false,"Tty":false}`)
	if err != nil {
		return err
	}
	defer body.Close()
	conn := body.(hijacked).Conn
	for left := size; left > 0; {
		n := min(len(chunk), left)
		if _, err := conn.Write(chunk[:n]); err != nil {
			return err
		}
		left -= n
	}
	if err := conn.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		return err
	}
	_, err = demuxCount(body)
	return err
}
