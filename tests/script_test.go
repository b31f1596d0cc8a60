package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

var residentBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "resident-tests-")
	if err != nil {
		panic(err)
	}
	residentBin = filepath.Join(dir, "resident")
	build := exec.Command("go", "build", "-race", "-o", residentBin, "../cmd/resident")
	if os.Getenv("RESIDENT_TEST_NORACE") != "" {
		build = exec.Command("go", "build", "-o", residentBin, "../cmd/resident")
	}
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		panic("building the resident: " + err.Error())
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("RESIDENT", residentBin)
			env.Setenv("DOCKER_HOST", os.Getenv("DOCKER_HOST"))
			env.Setenv("CI", os.Getenv("CI"))
			// A planted secret the resident must scrub: its name has the
			// local provider's secret prefix.
			env.Setenv("RESIDENT_SECRET_CANARY", "canary-env-5e1d9b7c2a")
			// For expiry.txtar: soon enough to wait for, late enough to
			// initialize and create first on a loaded machine.
			env.Setenv("EXPIRES", time.Now().Add(5*time.Second).UTC().Format(time.RFC3339Nano))
			env.Values["rpc"] = &sessions{}
			env.Defer(func() { env.Values["rpc"].(*sessions).killAll() })
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"rpc":          cmdRPC,
			"docker-image": cmdDockerImage,
		},
		Condition:           condition,
		RequireExplicitExec: true,
	})
}
