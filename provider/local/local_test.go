package local_test

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/local"
	"github.com/resident-dev/resident/provider/providertest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// harness runs the suite on one state dir shared by every provider the
// suite asks for, as a real host shares ~/.local/state/resident.
func harness(t *testing.T) providertest.Harness {
	state := t.TempDir()
	return providertest.Harness{
		New: func(t *testing.T) provider.Provider { return open(t, state) },
		// Wherever bwrap is installed local promises a pid namespace per
		// exec and exclusive execs; elsewhere the hostile cases skip.
		Isolated: bwrapInstalled(),
		// Image stays empty: local records it and runs host binaries.
		Volume: func(t *testing.T, name string, files map[string]string) {
			for rel, content := range files {
				path := filepath.Join(state, "local", "volumes", name, rel)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		},
	}
}

func open(t *testing.T, state string) *local.Provider {
	t.Helper()
	p, err := local.New(provider.Config{StateDir: state, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p.(*local.Provider)
}

func TestConformance(t *testing.T) {
	providertest.Run(t, harness(t))
}

func TestRegistered(t *testing.T) {
	p, err := provider.Open("local", provider.Config{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if info := p.Info(); info.Name != "local" || !info.Capabilities.Store || info.Capabilities.Isolation {
		t.Fatalf("Info() = %+v", info)
	}
	if provider.Summary("local") == "" {
		t.Error("no summary")
	}
}
