package main

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

//go:embed baseline.py
var baselinePy string

// findPython returns an interpreter that can import docker, or "". Debian's
// python3-docker (under /usr/bin/python3) comes first: it is the baseline
// the benchmark promises, and a pyenv python3 on PATH may shadow it.
func findPython() string {
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(py, "-c", "import docker").Run() == nil {
			return py
		}
	}
	return ""
}

// pyResult is baseline.py's output: durations in microseconds by operation.
type pyResult map[string]json.RawMessage

func (r pyResult) samples(key string) samples {
	var us []float64
	_ = json.Unmarshal(r[key], &us)
	out := make(samples, 0, len(us))
	for _, u := range us {
		out = append(out, time.Duration(u*float64(time.Microsecond)))
	}
	return dropWarmup(out)
}

func (r pyResult) int(key string) int64 {
	var n int64
	_ = json.Unmarshal(r[key], &n)
	return n
}

// runPython runs baseline.py with cfg; "" python means not installed.
func runPython(python string, cfg map[string]any) (pyResult, error) {
	if python == "" {
		return nil, nil
	}
	arg, _ := json.Marshal(cfg)
	cmd := exec.Command(python, "-c", baselinePy, string(arg))
	cmd.Env = allowedEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("docker-py baseline: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var res pyResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("docker-py baseline output: %w", err)
	}
	return res, nil
}

// dockerCLI runs the docker command line; okExit lists exit codes that are
// the expected answer (inspect of a missing id exits 1).
func dockerCLI(args []string, okExit ...int) func() error {
	return func() error {
		cmd := exec.Command("docker", args...)
		cmd.Env = allowedEnv()
		cmd.Stdout, cmd.Stderr = nil, nil
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			for _, code := range okExit {
				if ee.ExitCode() == code {
					return nil
				}
			}
		}
		if err != nil {
			return fmt.Errorf("docker %s: %w", strings.Join(args, " "), err)
		}
		return nil
	}
}

func haveDockerCLI() bool {
	_, err := exec.LookPath("docker")
	return err == nil
}

// spawnAndWait times a whole child process run.
func spawnAndWait(name string, args ...string) func() error {
	return func() error {
		cmd := exec.Command(name, args...)
		cmd.Env = allowedEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w: %s", name, err, out)
		}
		return nil
	}
}
