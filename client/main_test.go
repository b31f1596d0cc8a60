package client_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// residentBin is the real resident, built once; its directory is put first
// on PATH so the Example can spawn "resident" as a host would.
var residentBin string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "resident-client-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	residentBin = filepath.Join(dir, "resident")
	build := exec.Command("go", "build", "-o", residentBin, "../cmd/resident")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the resident:", err)
		return 1
	}
	os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	code := m.Run()
	if code == 0 {
		// Every Client goroutine (read loop, process waiter, log copier,
		// stdin forwarder) must be gone once its Client is closed.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}
