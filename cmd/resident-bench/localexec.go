package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// localExec: the local provider's exec of `true` against fork+exec+wait of
// the same program from Go and, where bubblewrap is installed, against
// bwrap run by hand with the namespaces and mounts of a sandbox (its own
// root, the system directories read-only, /proc, /dev, pid, net, IPC and
// UTS namespaces). A sandbox's namespaces are made once, at create (its
// keeper is their pid 1 and runs each exec), so an exec should cost about
// os/exec plus one round trip on the keeper's channel and the resident's
// hop; bwrap by hand is what each exec cost when every exec made its own.
func (b *bench) localExec() ([]row, error) {
	dir, err := os.MkdirTemp("", "resident-bench-local-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p, err := spawnResident(b.bin, "local", dir)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	if err := p.initialize(b.installID, nil); err != nil {
		return nil, err
	}
	id, err := p.createSandbox(map[string]any{})
	if err != nil {
		return nil, err
	}
	// The sandbox's init outlives the resident: end it before its directory goes.
	defer func() { _ = p.call("sandbox/terminate", map[string]any{"sandbox_id": id}, nil) }()
	truePath, err := exec.LookPath("true")
	if err != nil {
		return nil, err
	}
	series := []func() error{
		func() error { return p.exec(id, "true") },
		func() error { return exec.Command(truePath).Run() },
	}
	bwrap, bwrapErr := exec.LookPath("bwrap")
	if bwrapErr == nil {
		series = append(series, spawnAndWait(bwrap, byHandBwrapArgs(filepath.Join(dir, "bwrap-root"))...))
		if err := os.Mkdir(filepath.Join(dir, "bwrap-root"), 0o755); err != nil {
			return nil, err
		}
	}
	got, err := interleavedN(b.scale(300, 30), series...)
	if err != nil {
		return nil, err
	}
	ours, raw := got[0], got[1]
	r := row{figure: "extra: local provider exec of `true`", ours: medP99(ours), raw: medP99(raw) + " (os/exec)",
		ratio: fmt.Sprintf("%.2fx raw, %s", ratio(ours.median(), raw.median()), us(ours.median()-raw.median())), goal: "≤ os/exec + 1.5 ms (median)"}
	r.verdict = verdict(ours.median() <= raw.median()+1500*time.Microsecond)
	if len(got) == 3 {
		r.ratio += fmt.Sprintf("; bwrap by hand %s (p99 %s): the resident adds %s over that",
			ms(got[2].median()), ms(got[2].p99()), us(ours.median()-got[2].median()))
	}
	return []row{r}, nil
}

// byHandBwrapArgs are the namespaces and mounts local gives an exec,
// written out as a person would run them.
func byHandBwrapArgs(root string) []string {
	args := []string{"--bind", root, "/"}
	for _, d := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"} {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			args = append(args, "--ro-bind", real, d)
		}
	}
	return append(args, "--proc", "/proc", "--dev", "/dev", "--unshare-pid", "--unshare-net",
		"--unshare-ipc", "--unshare-uts", "--cap-drop", "ALL", "--", "true")
}
