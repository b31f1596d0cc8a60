package main

import (
	"fmt"
	"os"
	"os/exec"
	"time"
)

// externalExec measures what the external provider protocol adds: exec of
// `true` through `resident --provider external -- resident --serve-provider
// docker`, interleaved with the same exec through the built-in Docker
// provider (the long-lived session), on one engine and one image.
func (b *bench) externalExec() ([]row, error) {
	dir, err := os.MkdirTemp("", "resident-bench-external-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(b.bin, "--provider", "external", "--log-level", "error", "--",
		b.bin, "--serve-provider", "docker", "--state-dir", dir, "--log-level", "error")
	cmd.Env = allowedEnv()
	p, err := spawnHosted(cmd)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	if err := p.initialize(b.installID, nil); err != nil {
		return nil, err
	}
	id, err := p.createSandbox(map[string]any{"image": b.image})
	if err != nil {
		return nil, err
	}
	defer func() { _ = p.call("sandbox/terminate", map[string]any{"sandbox_id": id}, nil) }()
	served, builtin, err := interleaved(b.scale(200, 20),
		func() error { return p.exec(id, "true") },
		func() error { return b.res.exec(b.sandbox, "true") })
	if err != nil {
		return nil, err
	}
	over := served.median() - builtin.median()
	verdict := "NO"
	if over <= 500*time.Microsecond {
		verdict = "yes"
	}
	return []row{{figure: "exec of `true`, Docker served as an external provider", ours: medP99(served),
		raw: medP99(builtin) + " (built-in docker)", ratio: fmt.Sprintf("%.2fx built-in, %s", ratio(served.median(), builtin.median()), us(over)),
		goal: "≤ built-in + 0.5 ms", verdict: verdict}}, nil
}
