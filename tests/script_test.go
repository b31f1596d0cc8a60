package tests

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "resident-tests-")
	if err != nil {
		panic(err)
	}
	ResidentBin, err = BuildResident(dir, "../cmd/resident")
	if err != nil {
		panic(err)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// TestScripts runs every generic session once per provider under test
// (Providers: RESIDENT_PROVIDERS, or every one available). A session that
// holds for one backend only says so with [local] or [docker]; sessions of
// one backend alone live with its package (tests/docker).
func TestScripts(t *testing.T) {
	for _, provider := range Providers() {
		t.Run(provider, func(t *testing.T) { RunScripts(t, "testdata/script", ResidentBin, provider) })
	}
}
