package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/resident-dev/resident/provider/docker/dockertest"
)

// ResidentBin is the binary SpawnLive runs unless told another: each test
// package's TestMain sets it from BuildResident.
var ResidentBin string

// BuildResident builds cmd/resident (with -race unless
// RESIDENT_TEST_NORACE is set) into dir and returns its path. cmdDir is
// cmd/resident relative to the calling test's package.
func BuildResident(dir, cmdDir string) (string, error) {
	bin := filepath.Join(dir, "resident")
	args := []string{"build", "-race", "-o", bin, cmdDir}
	if os.Getenv("RESIDENT_TEST_NORACE") != "" {
		args = []string{"build", "-o", bin, cmdDir}
	}
	build := exec.Command("go", args...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building the resident: %w", err)
	}
	return bin, nil
}

// scriptInstallIDs are the install ids the scripts in dir initialize
// with: what they own is theirs to clean up, and nothing else on the
// engine, which other packages use at the same time.
func scriptInstallIDs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in %s: %v", dir, err)
	}
	ids := map[string]bool{}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range installIDInScript.FindAllSubmatch(text, -1) {
			ids[string(m[1])] = true
		}
	}
	return ids
}

var installIDInScript = regexp.MustCompile(`"install_id":"([^"]+)"`)

// RunScripts runs the testscript sessions in dir against the resident at
// bin on provider: `rpc start` loads it unless the script names another
// with --provider, $PROVIDER names it, $IMAGE is an image its sandboxes can
// run (ImageFor), and the conditions [local], [docker], … are true for the
// provider under test only.
func RunScripts(t *testing.T, dir, bin, provider string) {
	image := ImageFor(t, provider)
	if provider == "docker" {
		ids := scriptInstallIDs(t, dir)
		dockertest.RemoveNewAtCleanup(t, dockertest.Need(t), dockertest.OwnerIn(func(id string) bool { return ids[id] }))
	}
	testscript.Run(t, testscript.Params{
		Dir: dir,
		Setup: func(env *testscript.Env) error {
			env.Setenv("RESIDENT", bin)
			env.Setenv("PROVIDER", provider)
			env.Setenv("IMAGE", image)
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
		Condition:           func(cond string) (bool, error) { return condition(provider, cond) },
		RequireExplicitExec: true,
	})
}
