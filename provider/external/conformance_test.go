package external

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/providertest"
)

// served opens the external provider over `resident --serve-provider NAME`.
func served(t testing.TB, name, state string, adjust func(*provider.Config), extra ...string) provider.Provider {
	t.Helper()
	cfg := provider.Config{Logger: zaptest.NewLogger(t)}
	if adjust != nil {
		adjust(&cfg)
	}
	args := []string{residentBin(t), "--serve-provider", name, "--state-dir", state}
	for _, g := range cfg.AllowVolumes {
		mode := "ro"
		if g.Writable {
			mode = "rw"
		}
		args = append(args, "--allow-volume", g.Name+":"+mode)
	}
	cfg.Args = append(args, extra...)
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestConformanceOverServedLocal runs the whole provider contract through
// the external protocol, with local behind it in a child process.
func TestConformanceOverServedLocal(t *testing.T) {
	state := t.TempDir()
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T) provider.Provider { return served(t, "local", state, nil) },
		NewWith: func(t *testing.T, adjust func(*provider.Config)) provider.Provider {
			return served(t, "local", state, adjust)
		},
		Volume: func(t *testing.T, owner provider.Owner, name string, files map[string]string) {
			seedLocalVolume(t, state, name, files)
			record, err := json.Marshal(map[string]any{"name": name, "created_at": time.Now().UTC(), "tags": map[string]string{owner.Key: owner.InstallID}})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(state, "local", "volume-meta", name+".json"), record, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		ForeignVolume: func(t *testing.T, name string, files map[string]string) { seedLocalVolume(t, state, name, files) },
	})
}

func seedLocalVolume(t *testing.T, state, name string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(state, "local", "volume-meta"), 0o700); err != nil {
		t.Fatal(err)
	}
	for rel, content := range files {
		path := filepath.Join(state, "local", "volumes", name, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
