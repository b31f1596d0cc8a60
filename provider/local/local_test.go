package local_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/resident-dev/resident/protocol"
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
		New:   func(t *testing.T) provider.Provider { return open(t, state) },
		Plant: func(t *testing.T, tags map[string]string) string { return plant(t, state, tags) },
		// Wherever bwrap is installed local promises a pid namespace per
		// exec and exclusive execs; elsewhere the hostile cases skip.
		Isolated: bwrapInstalled(),
		// Image stays empty: local records it and runs host binaries.
		Volume: func(t *testing.T, owner provider.Owner, name string, files map[string]string) {
			seedFiles(t, state, name, files)
			record, err := json.Marshal(map[string]any{"name": name, "created_at": time.Now().UTC(), "tags": map[string]string{owner.Key: owner.InstallID}})
			must(t, err)
			must(t, os.WriteFile(filepath.Join(state, "local", "volume-meta", name+".json"), record, 0o600))
		},
		ForeignVolume: func(t *testing.T, name string, files map[string]string) { seedFiles(t, state, name, files) },
		NewWith: func(t *testing.T, adjust func(*provider.Config)) provider.Provider {
			return openWith(t, state, adjust)
		},
	}
}

// plant makes a sandbox, then rewrites its meta.json so that its tags are
// exactly tags, as a hand edit or another tool could.
func plant(t *testing.T, state string, tags map[string]string) string {
	t.Helper()
	p := open(t, state)
	id, err := p.Create(context.Background(), protocol.Spec{}, provider.Owner{Key: "planter-install-id", InstallID: "planter"}, nil)
	must(t, err)
	t.Cleanup(func() { _, _ = p.Terminate(context.Background(), id) })
	metaPath := filepath.Join(state, "local", "sandboxes", id, "meta.json")
	data, err := os.ReadFile(metaPath)
	must(t, err)
	var m map[string]any
	must(t, json.Unmarshal(data, &m))
	m["tags"] = tags
	data, err = json.Marshal(m)
	must(t, err)
	must(t, os.WriteFile(metaPath, data, 0o600))
	return id
}

// seedFiles writes files into a volume directory, with no record: a volume
// made by hand.
func seedFiles(t *testing.T, state, name string, files map[string]string) {
	for rel, content := range files {
		path := filepath.Join(state, "local", "volumes", name, rel)
		must(t, os.MkdirAll(filepath.Dir(path), 0o755))
		must(t, os.WriteFile(path, []byte(content), 0o644))
	}
}

func open(t *testing.T, state string) *local.Provider { return openWith(t, state, nil) }

func openWith(t *testing.T, state string, adjust func(*provider.Config)) *local.Provider {
	t.Helper()
	cfg := provider.Config{StateDir: state, Logger: zaptest.NewLogger(t)}
	if adjust != nil {
		adjust(&cfg)
	}
	p, err := local.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	// The resident's first call, which starts the provider.
	must(t, p.ApplyAuth(context.Background(), nil))
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
	// Isolation is announced where bwrap works (TestIsolationAnnounced).
	if info := p.Info(); info.Name != "local" || !info.Capabilities.Store || info.Capabilities.Isolation != bwrapInstalled() {
		t.Fatalf("Info() = %+v", info)
	}
	if provider.Summary("local") == "" {
		t.Error("no summary")
	}
}

// TestNewHasNoSideEffects: building a provider touches nothing; ApplyAuth,
// the provider's first call, starts it (state directories, leftovers).
func TestNewHasNoSideEffects(t *testing.T) {
	fresh := t.TempDir()
	p, err := local.New(provider.Config{StateDir: fresh, Logger: zaptest.NewLogger(t)})
	must(t, err)
	t.Cleanup(func() { p.Close() })
	if entries, _ := os.ReadDir(fresh); len(entries) != 0 {
		t.Fatalf("New made %v in a fresh state dir", entries)
	}
	must(t, p.ApplyAuth(context.Background(), nil))
	if _, err := os.Stat(filepath.Join(fresh, "local", "sandboxes")); err != nil {
		t.Errorf("ApplyAuth did not start the provider: %v", err)
	}

	state := t.TempDir()
	leftover := filepath.Join(state, "local", "trash", "lcl-0000000000000000-x")
	must(t, os.MkdirAll(leftover, 0o700))
	p, err = local.New(provider.Config{StateDir: state, Logger: zaptest.NewLogger(t)})
	must(t, err)
	t.Cleanup(func() { p.Close() })
	if _, err := os.Stat(leftover); err != nil {
		t.Fatalf("New reaped a leftover: %v", err)
	}
	must(t, p.ApplyAuth(context.Background(), nil))
	if _, err := os.Stat(leftover); err == nil {
		t.Error("ApplyAuth left a half-removed sandbox in the trash")
	}
}

// TestConformanceNetWithoutNetns runs the net cases the way a resident
// without root carries connections: each one a connection stream of the
// sandbox's keeper channel, no exec, instead of a socket the resident
// opens in the sandbox's network namespace itself.
func TestConformanceNetWithoutNetns(t *testing.T) {
	t.Cleanup(local.WithoutNetnsDial())
	providertest.RunNet(t, harness(t))
}

// Each provider keeps the metas it read, but what another resident on the
// same state directory did is seen at once: a sandbox it terminated is
// gone from the listing and from read_owner, one it made is listed.
func TestMetasReadBeforeFollowAnotherResident(t *testing.T) {
	state := t.TempDir()
	mine, other := open(t, state), open(t, state)
	ctx := context.Background()
	first, err := other.Create(ctx, protocol.Spec{}, owner, map[string]string{"n": "1"})
	must(t, err)
	listed := func() []string {
		t.Helper()
		list, err := mine.ListOwned(ctx, owner)
		must(t, err)
		var ids []string
		for _, s := range list {
			ids = append(ids, s.SandboxID+"="+s.Tags["n"])
		}
		return ids
	}
	for range 2 { // the second answer is from what the first read
		if got := listed(); !slices.Equal(got, []string{first + "=1"}) {
			t.Fatalf("listed %v", got)
		}
		if got, err := mine.ReadOwner(ctx, first, owner.Key); err != nil || got != owner.InstallID {
			t.Fatalf("ReadOwner = %q, %v", got, err)
		}
	}
	second, err := other.Create(ctx, protocol.Spec{}, owner, map[string]string{"n": "2"})
	must(t, err)
	if _, err := other.Terminate(ctx, first); err != nil {
		t.Fatal(err)
	}
	if got := listed(); !slices.Equal(got, []string{second + "=2"}) {
		t.Fatalf("after the other's terminate and create: listed %v", got)
	}
	if _, err := mine.ReadOwner(ctx, first, owner.Key); protocol.KindOf(err) != protocol.KindNotFound {
		t.Fatalf("ReadOwner of the terminated sandbox: %v", err)
	}
	_, _ = other.Terminate(ctx, second)
}
