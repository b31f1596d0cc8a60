package main

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

//go:embed shim_direct.py
var shimDirectPy string

//go:embed null_shim.py
var nullShimPy string

// shimExec is issue 15's first goal: exec of `true` through the reference
// Python Docker shim (python/examples/docker_shim over python3-docker), run
// by the resident as an external provider (`resident --provider external
// -- python3 -m resident_shim provider.py`), against the same shim's SDK
// call made directly from Python (shim_direct.py, timed in-process), the
// two interleaved on one engine and image. The difference is what the
// resident, the protocol hop and the shim bridge add. A second row takes
// the engine out: a shim whose exec returns at once (null_shim.py), the
// same two ways, is the hop alone.
func (b *bench) shimExec() ([]row, error) {
	if b.python == "" {
		// As the docker-py columns: a machine without it skips the figure.
		return []row{{figure: "exec of `true` through the Python Docker shim as an external provider",
			ours: "skipped: no python3 with the docker package (apt-get install python3-docker)", goal: "≤ direct + 2 ms (median)"}}, nil
	}
	pyDir := filepath.Join(moduleRoot(), "python")
	shim := filepath.Join(pyDir, "examples", "docker_shim", "provider.py")
	if _, err := os.Stat(shim); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "resident-bench-shim-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	null := filepath.Join(tmp, "null_shim.py")
	if err := os.WriteFile(null, []byte(nullShimPy), 0o600); err != nil {
		return nil, err
	}
	// The shim's owner key is the bench's, so sweep finds what it made.
	env := append(allowedEnv(), "PYTHONPATH="+pyDir, "DOCKER_SHIM_OWNER_KEY="+ownerKey, "PYTHONDONTWRITEBYTECODE=1")
	docker, err := b.bridgedAgainstDirect(shim, env, b.scale(200, 10))
	if err != nil {
		return nil, err
	}
	hop, err := b.bridgedAgainstDirect(null, env, b.scale(1000, 50))
	if err != nil {
		return nil, fmt.Errorf("null shim: %w", err)
	}
	over, hopOver := docker[0].median()-docker[1].median(), hop[0].median()-hop[1].median()
	return []row{
		{figure: "exec of `true` through the Python Docker shim as an external provider", ours: medP99(docker[0]),
			py: medP99(docker[1]) + " (the shim's SDK call, direct)", ratio: fmt.Sprintf("%.2fx direct, %s", ratio(docker[0].median(), docker[1].median()), us(over)),
			goal: "≤ direct + 2 ms (median)", verdict: verdict(over <= 2*time.Millisecond)},
		{figure: "extra: the same through a shim whose exec returns at once (the hop alone)", ours: medP99(hop[0]),
			py: medP99(hop[1]) + " (its call, direct)", ratio: us(hopOver)},
	}, nil
}

// bridgedAgainstDirect times exec of `true` through the resident and the
// shim bridge over shim, interleaved with the shim's own call made from
// Python: [bridged, direct].
func (b *bench) bridgedAgainstDirect(shim string, env []string, n int) ([2]samples, error) {
	var out [2]samples
	direct, err := startShimDirect(b.python, shim, b.image, b.installID, env)
	if err != nil {
		return out, err
	}
	defer direct.stop()
	cmd := exec.Command(b.bin, "--provider", "external", "--log-level", "error", "--",
		b.python, "-m", "resident_shim", shim, "--owner-key", ownerKey, "--log-level", "ERROR")
	cmd.Env = env
	p, err := spawnHosted(cmd)
	if err != nil {
		return out, err
	}
	defer p.stop()
	if err := p.initialize(b.installID, nil); err != nil {
		return out, err
	}
	id, err := p.createSandbox(map[string]any{"image": b.image})
	if err != nil {
		return out, err
	}
	defer func() { _ = p.call("sandbox/terminate", map[string]any{"sandbox_id": id}, nil) }()
	for range n + max(1, n/10) {
		start := time.Now()
		if err := p.exec(id, "true"); err != nil {
			return out, err
		}
		out[0] = append(out[0], time.Since(start))
		d, err := direct.exec()
		if err != nil {
			return out, err
		}
		out[1] = append(out[1], d)
	}
	out[0], out[1] = dropWarmup(out[0]), dropWarmup(out[1])
	return out, nil
}

// shimDirect is the Python process that makes the shim's SDK call itself.
type shimDirect struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startShimDirect(python, shim, image, installID string, env []string) (*shimDirect, error) {
	cmd := exec.Command(python, "-c", shimDirectPy, shim, image, installID)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := &shimDirect{cmd: cmd, in: in, out: bufio.NewReader(out)}
	if line, err := d.line(); err != nil || line != "ready" {
		d.stop()
		return nil, fmt.Errorf("shim_direct.py: %q %v", line, err)
	}
	return d, nil
}

func (d *shimDirect) line() (string, error) {
	s, err := d.out.ReadString('\n')
	return strings.TrimSpace(s), err
}

// exec asks for one exec and returns how long it took, as Python timed it.
func (d *shimDirect) exec() (time.Duration, error) {
	if _, err := io.WriteString(d.in, "x\n"); err != nil {
		return 0, err
	}
	line, err := d.line()
	if err != nil {
		return 0, fmt.Errorf("shim_direct.py: %w", err)
	}
	us, err := strconv.ParseFloat(line, 64)
	if err != nil {
		return 0, fmt.Errorf("shim_direct.py: %s", line)
	}
	return time.Duration(us * float64(time.Microsecond)), nil
}

// stop ends the input (the script removes its sandbox) and waits.
func (d *shimDirect) stop() {
	_ = d.in.Close()
	done := make(chan struct{})
	go func() { _ = d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = d.cmd.Process.Kill()
		<-done
	}
}
