package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// externalExec is issue 15's second goal: what the external provider
// protocol adds to a Go provider. Exec of `true` through `resident
// --provider external -- resident --serve-provider NAME`, interleaved with
// the same exec through the built-in NAME in-process, for docker (on one
// engine and one image, against the long-lived session) and for local
// (each on a state directory of its own).
func (b *bench) externalExec() ([]row, error) {
	dir, err := os.MkdirTemp("", "resident-bench-external-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	docker, err := b.servedAgainstBuiltin("docker", filepath.Join(dir, "docker"), map[string]any{"image": b.image},
		func() error { return b.res.exec(b.sandbox, "true") }, "built-in docker")
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	builtin, err := spawnResident(b.bin, "local", filepath.Join(dir, "local-builtin"))
	if err != nil {
		return nil, err
	}
	defer builtin.stop()
	if err := builtin.initialize(b.installID, nil); err != nil {
		return nil, err
	}
	sandbox, err := builtin.createSandbox(map[string]any{})
	if err != nil {
		return nil, err
	}
	// The sandbox's init outlives the resident: end it before its directory goes.
	defer func() { _ = builtin.call("sandbox/terminate", map[string]any{"sandbox_id": sandbox}, nil) }()
	local, err := b.servedAgainstBuiltin("local", filepath.Join(dir, "local-served"), map[string]any{},
		func() error { return builtin.exec(sandbox, "true") }, "built-in local")
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	return []row{docker, local}, nil
}

// servedAgainstBuiltin times exec of `true` on the built-in name served
// as an external provider against builtinExec, interleaved.
func (b *bench) servedAgainstBuiltin(name, stateDir string, spec map[string]any, builtinExec func() error, builtinName string) (row, error) {
	cmd := exec.Command(b.bin, "--provider", "external", "--log-level", "error", "--",
		b.bin, "--serve-provider", name, "--state-dir", stateDir, "--log-level", "error")
	cmd.Env = allowedEnv()
	p, err := spawnHosted(cmd)
	if err != nil {
		return row{}, err
	}
	defer p.stop()
	if err := p.initialize(b.installID, nil); err != nil {
		return row{}, err
	}
	id, err := p.createSandbox(spec)
	if err != nil {
		return row{}, err
	}
	defer func() { _ = p.call("sandbox/terminate", map[string]any{"sandbox_id": id}, nil) }()
	served, builtin, err := interleaved(b.scale(300, 20),
		func() error { return p.exec(id, "true") }, builtinExec)
	if err != nil {
		return row{}, err
	}
	over := served.median() - builtin.median()
	return row{figure: fmt.Sprintf("exec of `true`, %s served as an external provider", name), ours: medP99(served),
		raw: medP99(builtin) + " (" + builtinName + ")", ratio: fmt.Sprintf("%.2fx built-in, %s", ratio(served.median(), builtin.median()), us(over)),
		goal: "≤ built-in + 0.5 ms (median)", verdict: verdict(over <= 500*time.Microsecond)}, nil
}
